// The direct way within the main thread (CATCOMFORT_HTTP_THREADS=1): a POST whose body fits goes to
// the service as a front thread's does (direct-exchange.ts, direct-service.ts) instead of through the
// relay to uWS, so its body is copied once, into a block of the slab, and viewed there in place.
// The two sides hand each other their messages by microtask, as a thread and the main thread by
// postMessage: each message is handled after the code that sent it has returned.
import { createSlab, SlabWriter } from './body-slab';
import { DirectLink } from './direct-exchange';
import { DirectService, type DirectServiceOptions } from './direct-service';

/** The front's side of the way, its slab for `requests` at once (the front's pool and queue); the service writes their access lines. */
export function localDirect(requests: number, serve: DirectServiceOptions['serve']): DirectLink {
  const slab = createSlab(requests);
  const service = new DirectService({ slab, post: (answer) => queueMicrotask(() => link.answered(answer)), serve, carryLines: false });
  const link = new DirectLink((message) => queueMicrotask(() => service.receive(message)), new SlabWriter(slab));
  return link;
}
