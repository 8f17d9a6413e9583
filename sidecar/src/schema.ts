// zod/mini (tree-shaken to a few KB) keeps the bundled sidecar's startup and idle memory low; English messages on.
// Import as `import * as z from './schema.ts'` so the bundler keeps only what is used.

import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

export * from 'zod/mini';
