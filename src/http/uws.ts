// Loads the native uWebSockets.js binary directly. The package's own entry silently
// falls back to a slow pure-JS stand-in when the binary fails; we refuse to run on that.
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Uws from '@trufflesuite/uws-js-unofficial';

const requireHere = createRequire(__filename);

function loadNative(): typeof Uws {
  const pkgDir = path.dirname(requireHere.resolve('@trufflesuite/uws-js-unofficial/package.json'));
  const binary = path.join(
    pkgDir,
    'binaries',
    `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`,
  );
  try {
    return requireHere(binary) as typeof Uws;
  } catch (error) {
    throw new Error(`Native uWebSockets.js binary ${binary} failed to load: ${(error as Error).message}`);
  }
}

export const uws = loadNative();
export type HttpResponse = Uws.HttpResponse;
export type HttpRequest = Uws.HttpRequest;
export type TemplatedApp = Uws.TemplatedApp;
export type ListenSocket = Uws.us_listen_socket;
export type WebSocket<UserData> = Uws.WebSocket<UserData>;
