// Build of the web console: hashed asset files under /console/assets/, no inline script (the
// operator serves them with a strict CSP); Preact's JSX through esbuild, no plugin needed.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/console/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 800,
  },
});
