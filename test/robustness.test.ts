// Hostile and corrupt inputs, generated from a fixed seed so every run sends the same requests:
// every answer is one of the documented statuses, never a 500, and the service stays up.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { seededRandom } from '../src/train/evaluate';
import { postJson, request } from './helpers/http';
import { photo } from './helpers/paths';
import { startServer, type TestServer } from './helpers/server';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

const sources = ['004_oxford_Persian_163.jpg', '000_skimage_chelsea.png', '041_ggoni_cats_couch.jpg'].map((f) => readFileSync(photo(f)));

test('corrupted photos (truncated, bytes flipped, chunks spliced) answer 200 or 400 on v2 and 200 on v1', async () => {
  const random = seededRandom(20261122);
  for (let i = 0; i < 60; i++) {
    const source = sources[i % sources.length]!;
    const bytes = Buffer.from(source);
    const mode = i % 3;
    let image: Buffer;
    if (mode === 0) image = bytes.subarray(0, Math.floor(random() * bytes.length));
    else if (mode === 1) {
      for (let k = 0; k < 1 + Math.floor(random() * 20); k++) bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
      image = bytes;
    } else {
      const cut = Math.floor(random() * bytes.length);
      image = Buffer.concat([bytes.subarray(0, cut), bytes.subarray(Math.floor(random() * cut))]);
    }
    const b64 = image.toString('base64');
    const v2 = await postJson(`${server.url}/v2/predict`, { image: b64 });
    assert.ok(v2.status === 200 || v2.status === 400, `v2 case ${i}: ${v2.status} ${v2.text.slice(0, 200)}`);
    if (v2.status === 400) assert.equal(v2.body.error.code, 'invalid_image');
    const v1 = await postJson(`${server.url}/invocations`, { media_data: { image: b64 } });
    assert.equal(v1.status, 200, `v1 case ${i}: ${v1.text.slice(0, 200)}`);
  }
});

test('random JSON-ish bodies answer 200, 400 or 422, never 500', async () => {
  const random = seededRandom(7);
  const pieces = ['{', '}', '[', ']', '"image"', '"threshold"', ':', ',', '"aGk="', '0.5', 'null', 'true', '-1e309', '"\\u0000"', ' ', '"data:image/png;base64,"'];
  for (let i = 0; i < 150; i++) {
    const body = Array.from({ length: 1 + Math.floor(random() * 12) }, () => pieces[Math.floor(random() * pieces.length)]).join('');
    const v2 = await request(`${server.url}/v2/predict`, { method: 'POST', body });
    assert.ok([200, 400, 422].includes(v2.status), `v2 ${JSON.stringify(body)}: ${v2.status} ${v2.text.slice(0, 200)}`);
    const v1 = await request(`${server.url}/invocations`, { method: 'POST', body });
    assert.ok([200, 422].includes(v1.status), `v1 ${JSON.stringify(body)}: ${v1.status} ${v1.text.slice(0, 200)}`);
  }
  assert.equal((await request(`${server.url}/ping`)).status, 200);
});

test('no unexpected server errors were logged', async () => {
  await server.stop(); // its stderr is read to the end only once it has exited
  assert.deepEqual(server.output().split('\n').filter((line) => line.includes('"level":"error"')), []);
});
