// Starts the shared devnet for the test run (filled in by the devnet work).
import type { TestProject } from 'vitest/node';

export async function setupDevnet(_project: TestProject): Promise<() => Promise<void>> {
  return async () => {};
}
