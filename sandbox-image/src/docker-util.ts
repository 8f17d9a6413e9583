// Small Docker helpers shared by the image builder steps.
import Docker from 'dockerode';

export type ProgressFn = (line: string) => void;

export function dockerClient(): Docker {
  return new Docker();
}

export async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}

/** Turns a byte stream into whole lines for `onLine` (the last partial line waits for more). */
export function lineSplitter(onLine: (line: string) => void): (chunk: Buffer | string) => void {
  let rest = '';
  return (chunk) => {
    rest += chunk.toString();
    const lines = rest.split(/\r?\n/);
    rest = lines.pop() ?? '';
    for (const l of lines) if (l.trim()) onLine(l);
  };
}
