// V8's on-disk compile cache for the bundled CLI (node:module enableCompileCache, Node >= 22.1): the
// bundle's chunks are compiled once and read back on later runs. A no-op on older Node, and never
// fatal; NODE_DISABLE_COMPILE_CACHE=1 turns it off, NODE_COMPILE_CACHE=DIR moves it (Node's own).
import module from 'node:module';

export function enableCompileCache(): void {
  const m = module as { enableCompileCache?: () => unknown };
  try {
    m.enableCompileCache?.();
  } catch {
    // A read-only or full temp dir only costs the cache.
  }
}
