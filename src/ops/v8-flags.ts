// V8 settings for a request/response service, set once as the service starts, before any request.
// Allocation-site pretenuring is off: under load V8 saw request objects outlive a scavenge (many
// requests in flight) and allocated later ones from the same sites straight in the old generation.
// Dead there until the next full collection, they kept the young objects they point to alive
// through every scavenge, which copied and then promoted them: the collector took 17-23 % of the
// main thread with the front on 2 threads. Off, request objects die young (docs/performance-log.md).
import { setFlagsFromString } from 'node:v8';

export function tuneCollector(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}
