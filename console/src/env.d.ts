// Vite resolves CSS imports to asset files; TypeScript only needs to know they exist.
declare module '*.css';
