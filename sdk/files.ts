// @agent-sandbox/sdk/files: the crash-safe private file writer alone (node built-ins only), for
// the CLI's session cache, which should not load the whole SDK to write one file.
export { createExclusive, writeFileAtomic } from './src/atomic-file.ts';
