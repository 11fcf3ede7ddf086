// The access log's `request` line as written: `{"level":"info","time":...,...fields,"msg":"request"}`,
// by the main thread (access-log.ts) or by the front thread that frames the answer (front-thread-main.ts).
import type { AccessLineFields } from '../http/exchange';
import { log } from '../log';

export function writeRequestLine(fields: AccessLineFields): void {
  log.info('request', fields);
}
