// A run's whole process tree, read from /proc: harnesses start their tools in sessions of their own,
// out of the run's process group, so cancel and timeout signal every descendant by pid and group.
import { readdirSync, readFileSync } from 'node:fs';
import { KILL_GRACE_MS } from '../exec/run-process.ts';

/** [parent pid, start time] of a process, or undefined when it is gone. */
function stat(pid: number | string): [number, string] | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ..." — comm may hold spaces and parentheses; the last ')' ends it.
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return [Number(f[1]), f[19] ?? ''];
  } catch {
    return undefined;
  }
}

/** pid → parent pid of every process visible in /proc. */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = stat(name);
    if (st) out.set(Number(name), st[0]);
  }
  return out;
}

/** Every descendant of `root` (not root itself), children before grandchildren. */
export function descendants(root: number): number[] {
  const kids = new Map<number, number[]>();
  for (const [pid, ppid] of parents()) {
    const list = kids.get(ppid) ?? [];
    list.push(pid);
    kids.set(ppid, list);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length) {
    for (const k of kids.get(queue.shift()!) ?? []) {
      out.push(k);
      queue.push(k);
    }
  }
  return out;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, sig);
    } catch {}
  }
}

/**
 * TERM to every descendant of `root` (each as a process and as a group leader), KILL after the
 * grace period to those still there. Taken before the run's own group is signalled, while the
 * descendants are still children of the harness and not yet orphans of init.
 */
export function terminateTree(root: number, graceMs = KILL_GRACE_MS): void {
  // Start times guard the KILL against a pid the kernel handed to someone else meanwhile.
  const pids = descendants(root).map((p) => [p, stat(p)?.[1]] as const);
  for (const [p] of pids) signal(p, 'SIGTERM');
  if (!pids.length) return;
  setTimeout(() => {
    for (const [p, start] of pids) if (start && stat(p)?.[1] === start) signal(p, 'SIGKILL');
  }, graceMs).unref();
}
