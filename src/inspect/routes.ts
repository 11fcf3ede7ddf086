// GET /inspect: a page that sends photos to /v2/predict with the user's key and draws each answer
// on its photo (docs/api-v2.md "Inspection page"). The page, its stylesheet and its ES modules (compiled
// from page/ by page/tsconfig.json) are read once at start and served with SECURITY_HEADERS.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Exchange } from '../http/exchange';
import { requestIdFrom } from '../errors';
import type { Router } from '../http/router';
import { INSPECT_CSS } from './css';
import { SECURITY_HEADERS } from './headers';
import { INSPECT_HTML } from './html';

function asset(body: string | Buffer, contentType: string) {
  return (ex: Exchange): void =>
    ex.send(200, { ...SECURITY_HEADERS, 'Content-Type': contentType, 'Cache-Control': 'no-cache', 'X-Request-ID': requestIdFrom(ex.header('x-request-id')) }, body);
}

export function registerInspect(router: Router): void {
  router.add('GET', '/inspect', asset(INSPECT_HTML, 'text/html; charset=utf-8')).add('GET', '/inspect/inspect.css', asset(INSPECT_CSS, 'text/css; charset=utf-8'));
  const modules = path.join(__dirname, 'page');
  for (const file of readdirSync(modules).filter((f) => f.endsWith('.js'))) {
    router.add('GET', `/inspect/${file}`, asset(readFileSync(path.join(modules, file)), 'text/javascript; charset=utf-8'));
  }
}
