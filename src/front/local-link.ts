// The way to the service within the main thread (CATCOMFORT_HTTP_THREADS=1): requests go as a front
// thread's do (service-link.ts, service-side.ts), so a body is copied once, into a block of the slab,
// and viewed there in place. The two sides hand each other their messages by microtask, as a thread
// and the main thread by postMessage: each message is handled after the code that sent it has returned.
import { createSlab, SlabWriter } from './body-slab';
import type { PlaceLimits } from './places';
import { Places } from './places';
import { ServiceLink } from './service-link';
import { ServiceSide, type ServiceSideOptions } from './service-side';

/** The front's side of the way, with its places and a slab for as many requests; the service writes the usual way's access lines. */
export function localLink(limits: PlaceLimits, service: Pick<ServiceSideOptions, 'serve'>): ServiceLink {
  const slab = createSlab(limits.places + limits.queue);
  const side = new ServiceSide({ slab, post: (answer) => queueMicrotask(() => link.answered(answer)), ...service, carryLines: false });
  const link = new ServiceLink((message) => queueMicrotask(() => side.receive(message)), new SlabWriter(slab), new Places(limits));
  return link;
}
