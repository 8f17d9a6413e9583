// Vitest global setup for the real-container tests: ensures the sandbox image (built once, reused by
// content-hash tag) and provides its tag as inject('sandboxImage'). The root and sidecar configs use it.

import type { TestProject } from 'vitest/node';
import { ensureSandboxImage } from '../sandbox-image.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    sandboxImage: string;
  }
}

export async function setupImage(project: TestProject): Promise<() => Promise<void>> {
  const { tag } = await ensureSandboxImage({
    onProgress: (line) => process.stderr.write(`[image] ${line}\n`),
  });
  project.provide('sandboxImage', tag);
  // The image is a cache shared by every run: it is kept, not removed.
  return async () => {};
}

/** Default export, so a vitest config can name this file as its `globalSetup`. */
export default setupImage;
