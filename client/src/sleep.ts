// The wait of the client's polling loops (create's progress, the chain's receipts): it ends early
// when `signal` aborts (at once if it already has) and takes its listener off the signal when it
// ends, so a loop of waits on one long-lived signal (the CLI's) leaves nothing behind.
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
