// How the boot server (server.ts) loads the full app. From source this is a dynamic import; the
// image's bundler replaces this file with a require of the app's own bundle (sidecar-app.cjs), so
// the boot bundle the container starts with holds only /health, PUT /env and what they need.
import type * as App from './app.ts';

export const importApp = (): Promise<typeof App> => import('./app.ts');
