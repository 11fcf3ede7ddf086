// The HTTP server must be the native uWebSockets.js binary, never the package's JS stand-in.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uws } from '../src/http/uws';

test('uWebSockets.js is the native binary', () => {
  assert.match(Function.prototype.toString.call(uws.App), /\[native code\]/);
  assert.equal(typeof uws.us_socket_local_port, 'function');
});
