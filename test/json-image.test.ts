// The v2 body's image read as bytes (src/http/json-image.ts): wherever it splits a body, the
// members and the image equal what JSON.parse makes of the whole body; every other shape falls
// back to the whole parse (null). Through the real service, a body the split cannot take answers
// as before: an escaped image, and a control character inside it (422 JSON decode error).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { PLACEHOLDER, splitImage } from '../src/http/json-image';
import { postJson, request } from './helpers/http';
import { photo } from './helpers/paths';
import { startServer, type TestServer } from './helpers/server';

const image = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');

test('split bodies equal the whole parse: the members, and the image as bytes', () => {
  const bodies = [
    `{"image":"${image}"}`,
    ` {\n "image" : "${image}" ,\t"threshold": 0.5 } `,
    `{"threshold":0.25,"meta":{"a":[1,{"b":"x\\"}y"}],"c":"\\\\"},"image":"${image}","z":null}`,
    `{"image":"data:image/png;base64,${image}","note":"caf\u00e9"}`,
  ];
  for (const text of bodies) {
    const split = splitImage(Buffer.from(text), 'image');
    assert.ok(split, text.slice(0, 60));
    const whole = JSON.parse(text) as Record<string, unknown>;
    assert.ok(Buffer.isBuffer(split.image));
    assert.equal(split.image.toString('utf8'), whole.image);
    assert.deepEqual({ ...split, image: PLACEHOLDER }, { ...whole, image: PLACEHOLDER });
  }
});

test('every other shape is left to the whole parse (null)', () => {
  const refused = [
    '',
    '[]',
    '"image"',
    '{}',
    '{"threshold":0.5}',
    '{"image":""}',
    '{"image":"ab\\/cd"}',
    '{"image":5}',
    '{"image":"abc","image":"abd"}',
    '{"image":"abc"',
    '{"image":"abc",}',
    '{"image":"abc"x}',
    '{"image":"abc","t":}',
    '{"image":"abc"} trailing',
    '{"image":"abc", "t": [1, 2}',
  ];
  for (const text of refused) assert.equal(splitImage(Buffer.from(text), 'image'), null, text);
});

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.stop();
});

test('through the service: an escaped image answers as the plain one; a control character in it is a 422 JSON decode error', async () => {
  const plain = await postJson(`${server.url}/v2/predict`, { image }, { 'x-request-id': 'json-image-1' });
  assert.equal(plain.status, 200, plain.text);
  const escaped = await request(`${server.url}/v2/predict`, { body: `{"image":"${image.replaceAll('/', '\\/')}"}`, headers: { 'x-request-id': 'json-image-1' } });
  assert.equal(escaped.text, plain.text);
  const control = await request(`${server.url}/v2/predict`, { body: `{"image":"${image.slice(0, 100)}\u0001${image.slice(100)}"}` });
  const whole = await request(`${server.url}/v2/predict`, { body: `{"image":"${image.slice(0, 100)}\u0001${image.slice(100)}", "x": }` });
  assert.equal(control.status, 422, control.text);
  assert.deepEqual(control.body.details, whole.body.details);
});
