// The Unix-socket transport of the sidecar client: an undici dispatcher (the same undici major
// as Node 20's global fetch) that connects every request to one socket path. Idle connections
// close after a few seconds, so a dropped client leaves nothing open behind it.
import { Agent, type Dispatcher } from 'undici';

export function socketDispatcher(socketPath: string): Dispatcher {
  return new Agent({ connect: { socketPath }, keepAliveTimeout: 4_000 });
}
