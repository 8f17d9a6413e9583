// Global setup for running the sidecar's tests alone: only the sandbox image fixture.
import type { TestProject } from 'vitest/node';
import { setupImage } from '../../../test/setup/image.ts';

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return setupImage(project);
}
