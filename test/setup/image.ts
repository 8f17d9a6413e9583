// Ensures the sandbox image for the test run (filled in by the sidecar/image work).
import type { TestProject } from 'vitest/node';

export async function setupImage(_project: TestProject): Promise<() => Promise<void>> {
  return async () => {};
}
