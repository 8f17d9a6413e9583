// Ensures the sandbox image for the test run (built once, reused by content-hash tag) and provides its tag.
import { ensureSandboxImage } from '@agent-sandbox/sidecar';
import type { TestProject } from 'vitest/node';

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
