// The access log's `request` line as written: `{"level":"info","time":...,...fields,"msg":"request"}`,
// by the main thread (ops/access-log.ts) or by the front that frames the answer (front/service-link.ts).
import type { AccessLineFields } from './exchange';
import { log } from '../log';

export function writeRequestLine(fields: AccessLineFields): void {
  log.info('request', fields);
}
