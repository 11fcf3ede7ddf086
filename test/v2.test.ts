// The v2 API end to end: the real service on 127.0.0.1, the real bc-v1 pack, real photos.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { postJson, request } from './helpers/http';
import { photo } from './helpers/paths';
import { makeHugeHeaderPng, makePng } from './helpers/png';
import { startServer, type TestServer } from './helpers/server';

const manifest = JSON.parse(readFileSync(photo('manifest.json'), 'utf8')) as {
  images: Array<{ file: string; group: string; box: number[] | null; width: number; height: number }>;
};
const b64 = (file: string) => readFileSync(photo(file)).toString('base64');
const CAT = '000_skimage_chelsea.png';
const NO_CAT = '111_skimage_coffee.png';

function overlap(a: number[], b: number[]): number {
  const w = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
  const h = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const inter = w * h;
  const area = (r: number[]) => (r[2]! - r[0]!) * (r[3]! - r[1]!);
  return inter / (area(a) + area(b) - inter);
}

function assertError(res: { status: number; body: any; headers: Headers }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error.code, code);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(typeof res.body.error.details, 'object');
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
}

let server: TestServer;
let url: string;

before(async () => {
  server = await startServer({ CATCOMFORT_MAX_BODY_BYTES: String(2 * 1024 * 1024) });
  url = server.url;
});
after(() => server.stop());

describe('predictions', () => {
  test('a cat photo is detected with a box on the cat and a consistent prediction', async () => {
    const res = await postJson(`${url}/v2/predict`, { image: b64(CAT) });
    assert.equal(res.status, 200, res.text);
    const body = res.body;
    assert.deepEqual(Object.keys(body).sort(), ['cat', 'detection', 'image', 'model', 'prediction', 'request_id']);
    assert.equal(body.detection, 'detected');
    assert.equal(body.model.id, 'bc-v1');
    assert.equal(body.model.version, JSON.parse(readFileSync('package.json', 'utf8')).version);
    assert.deepEqual(body.image, { width: 451, height: 300 });
    const box = body.cat.bounding_box;
    const expected = manifest.images.find((i) => i.file === CAT)!.box!;
    assert.ok(overlap([box.x_min, box.y_min, box.x_max, box.y_max], expected) > 0.5, JSON.stringify(box));
    for (const k of ['x_min', 'y_min', 'x_max', 'y_max']) assert.ok(Number.isInteger(box[k]));
    assert.ok(body.cat.detection_confidence >= 0.69);
    const { score, threshold, label } = body.prediction;
    assert.ok(score >= 0 && score <= 1);
    assert.equal(threshold, 0.3);
    assert.equal(label, score > threshold ? 'discomfort' : 'comfort');
    assert.equal(res.headers.get('x-request-id'), body.request_id);
  });

  test('a photo without a cat is not_detected with null prediction and cat', async () => {
    const res = await postJson(`${url}/v2/predict`, { image: b64(NO_CAT) });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.detection, 'not_detected');
    assert.equal(res.body.prediction, null);
    assert.equal(res.body.cat, null);
    const entry = manifest.images.find((i) => i.file === NO_CAT)!;
    assert.deepEqual(res.body.image, { width: entry.width, height: entry.height });
  });

  test('threshold 0 and 1 (JSON integers) and null flip or keep the label by the rule', async () => {
    const image = b64(CAT);
    const zero = await postJson(`${url}/v2/predict`, { image, threshold: 0 });
    const one = await postJson(`${url}/v2/predict`, { image, threshold: 1 });
    const nul = await postJson(`${url}/v2/predict`, { image, threshold: null });
    assert.equal(zero.body.prediction.threshold, 0);
    assert.equal(zero.body.prediction.label, zero.body.prediction.score > 0 ? 'discomfort' : 'comfort');
    assert.equal(one.body.prediction.threshold, 1);
    assert.equal(one.body.prediction.label, 'comfort');
    assert.equal(nul.body.prediction.threshold, 0.3);
    assert.equal(zero.body.prediction.score, one.body.prediction.score);
    const mid = zero.body.prediction.score;
    const below = await postJson(`${url}/v2/predict`, { image, threshold: Math.max(0, mid - 0.01) });
    const at = await postJson(`${url}/v2/predict`, { image, threshold: mid });
    assert.equal(below.body.prediction.label, 'discomfort');
    assert.equal(at.body.prediction.label, 'comfort');
  });

  test('the data: prefix is accepted and gives the same result; unknown fields are ignored', async () => {
    const plain = await postJson(`${url}/v2/predict`, { image: b64(CAT) });
    const prefixed = await postJson(`${url}/v2/predict`, { image: `data:image/png;base64,${b64(CAT)}`, extra: 1 });
    assert.equal(prefixed.status, 200);
    assert.deepEqual({ ...prefixed.body, request_id: '' }, { ...plain.body, request_id: '' });
  });

  test('the named-model route serves bc-v1 and an unknown model is 404 model_not_found', async () => {
    const ok = await postJson(`${url}/v2/models/bc-v1/predict`, { image: b64(CAT) });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.model.id, 'bc-v1');
    const missing = await postJson(`${url}/v2/models/nope/predict`, { image: b64(CAT) });
    assertError(missing, 404, 'model_not_found');
    assert.deepEqual(missing.body.error.details, { model_id: 'nope' });
  });

  test('GET /v2/models lists the loaded packs', async () => {
    const res = await request(`${url}/v2/models`);
    assert.equal(res.status, 200);
    const v1 = res.body.models.find((m: any) => m.id === 'bc-v1');
    assert.equal(v1.default_threshold, 0.3);
    assert.equal(typeof v1.version, 'string');
    assert.equal((await request(`${url}/v2/models`, { key: null })).status, 401);
  });
});

describe('request ids', () => {
  test('a valid client X-Request-ID is echoed in header and body', async () => {
    const res = await postJson(`${url}/v2/predict`, { image: b64(NO_CAT) }, { 'X-Request-ID': 'abc-123_x.y:z' });
    assert.equal(res.body.request_id, 'abc-123_x.y:z');
    assert.equal(res.headers.get('x-request-id'), 'abc-123_x.y:z');
  });

  test('an unacceptable X-Request-ID is replaced by a generated one, also on errors', async () => {
    const res = await postJson(`${url}/v2/predict`, {}, { 'X-Request-ID': 'has space' + 'x'.repeat(200) });
    assert.equal(res.status, 422);
    assert.match(res.body.request_id, /^[0-9a-f-]{36}$/);
    assert.equal(res.headers.get('x-request-id'), res.body.request_id);
  });
});

describe('errors (spec 7.1)', () => {
  test('401 unauthorized for a missing or wrong key', async () => {
    assertError(await postJson(`${url}/v2/predict`, { image: 'x' }, {}, null), 401, 'unauthorized');
    assertError(await postJson(`${url}/v2/predict`, { image: 'x' }, {}, 'wrong-key-0123456789'), 401, 'unauthorized');
  });

  test('404 not_found under /v2 and 405 with Allow', async () => {
    assertError(await request(`${url}/v2/nothing-here`), 404, 'not_found');
    const res = await request(`${url}/v2/predict`);
    assertError(res, 405, 'method_not_allowed');
    assert.equal(res.headers.get('allow'), 'POST');
  });

  const invalid = (field: string, message: string) => ({ field, message });
  const cases: Array<[string, string | undefined, Array<{ field: string; message: string }>]> = [
    ['missing body', '', [invalid('body', 'Field required')]],
    ['malformed JSON', '{"image": ', [invalid('body', 'JSON decode error')]],
    ['array body', '[1,2]', [invalid('body', 'Input should be a valid dictionary or object to extract fields from')]],
    ['image missing', '{"threshold": 0.5}', [invalid('image', 'Field required')]],
    ['image not a string', '{"image": 12}', [invalid('image', 'Input should be a valid string')]],
    ['empty image string', '{"image": ""}', [invalid('image', 'String should have at least 1 character')]],
    ['threshold above 1', '{"image": "aGk=", "threshold": 1.5}', [invalid('threshold', 'Input should be less than or equal to 1')]],
    ['threshold below 0', '{"image": "aGk=", "threshold": -0.1}', [invalid('threshold', 'Input should be greater than or equal to 0')]],
    ['threshold string', '{"image": "aGk=", "threshold": "0.5"}', [invalid('threshold', 'Input should be a valid number')]],
    ['threshold boolean', '{"image": "aGk=", "threshold": true}', [invalid('threshold', 'Input should be a valid number')]],
    ['threshold NaN', '{"image": "aGk=", "threshold": NaN}', [invalid('body', 'JSON decode error')]],
    ['both fields wrong', '{"threshold": "secret-value"}', [invalid('image', 'Field required'), invalid('threshold', 'Input should be a valid number')]],
  ];
  for (const [name, body, errors] of cases) {
    test(`422 invalid_request: ${name}`, async () => {
      const res = await request(`${url}/v2/predict`, { method: 'POST', body: body ?? '' });
      assertError(res, 422, 'invalid_request');
      assert.equal(res.body.error.message, 'Request validation failed.');
      assert.deepEqual(res.body.error.details, { errors });
      assert.ok(!res.text.includes('secret-value'), 'submitted values are never echoed');
    });
  }

  const badImages: Array<[string, string, string]> = [
    ['invalid characters', 'aGVsbG8*d29ybGQ=', 'Image is not valid base64.'],
    ['URL-safe alphabet', readFileSync(photo(CAT)).toString('base64url'), 'Image is not valid base64.'],
    ['wrong padding', 'aGVsbG8', 'Image is not valid base64.'],
    ['empty after data prefix', 'data:image/png;base64,', 'Image is empty.'],
    ['not an image', Buffer.from('just some text, not an image at all').toString('base64'), 'Image could not be decoded.'],
    ['truncated JPEG', readFileSync(photo('004_oxford_Persian_163.jpg')).subarray(0, 20000).toString('base64'), 'Image could not be decoded.'],
    ['16-bit PNG', makePng(64, 48, 16).toString('base64'), 'Unsupported pixel format; send an 8-bit image.'],
  ];
  for (const [name, image, message] of badImages) {
    test(`400 invalid_image: ${name}`, async () => {
      const res = await postJson(`${url}/v2/predict`, { image });
      assertError(res, 400, 'invalid_image');
      assert.equal(res.body.error.message, message);
      assert.deepEqual(res.body.error.details, {});
    });
  }

  test('400 invalid_image for a decompression bomb header, answered quickly', async () => {
    const res = await postJson(`${url}/v2/predict`, { image: makeHugeHeaderPng(30000, 30000).toString('base64') });
    assertError(res, 400, 'invalid_image');
    assert.match(res.body.error.message, /^Image is too large; at most \d+ pixels\.$/);
  });

  test('an 8-bit PNG made at test time decodes (control for the 16-bit case)', async () => {
    const res = await postJson(`${url}/v2/predict`, { image: makePng(64, 48, 8).toString('base64') });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.image, { width: 64, height: 48 });
  });

  test('413 http_error over CATCOMFORT_MAX_BODY_BYTES', async () => {
    const res = await postJson(`${url}/v2/predict`, { image: 'A'.repeat(3 * 1024 * 1024) });
    assertError(res, 413, 'http_error');
  });

  test('415 http_error for a non-JSON content type', async () => {
    const res = await request(`${url}/v2/predict`, { method: 'POST', body: 'image=abc', headers: { 'content-type': 'text/plain' } });
    assertError(res, 415, 'http_error');
  });

  test('a malformed Content-Length is refused (400 or closed by the HTTP parser), never a 500', async () => {
    for (const length of ['-5', '5x', '99999999999999999999']) {
      // Ends at the answer's headers or when the server closes; a server that does neither fails.
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(server.port, '127.0.0.1', () => {
          socket.write(`POST /v2/predict HTTP/1.1\r\nHost: x\r\napi-key: test-key-0123456789abcdef\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n{}`);
        });
        const limit = setTimeout(() => {
          socket.destroy();
          reject(new Error(`Content-Length ${length}: neither answered nor closed`));
        }, 60_000);
        let data = '';
        const done = () => {
          clearTimeout(limit);
          socket.destroy();
          resolve(data);
        };
        socket.on('data', (chunk) => {
          data += chunk.toString();
          if (data.includes('\r\n\r\n')) done();
        });
        socket.on('close', done);
        socket.on('error', done);
      });
      const status = /^HTTP\/1\.1 (\d+)/.exec(raw)?.[1];
      assert.ok(status === undefined || status === '400', `Content-Length ${length}: ${raw.slice(0, 120)}`);
    }
    assert.equal((await postJson(`${url}/v2/predict`, { image: b64(NO_CAT) })).status, 200);
  });

  test('a client that disconnects mid-upload leaves the service healthy', async () => {
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(server.port, '127.0.0.1', () => {
        socket.write(
          `POST /v2/predict HTTP/1.1\r\nHost: x\r\napi-key: test-key-0123456789abcdef\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{"image":"AAAA`,
          () => {
            // The partial request is in the kernel's hands; closing now reaches the server after it.
            socket.destroy();
            resolve();
          },
        );
      });
      socket.on('error', reject);
    });
    const res = await postJson(`${url}/v2/predict`, { image: b64(NO_CAT) });
    assert.equal(res.status, 200);
  });
});

describe('description and docs', () => {
  test('GET /v2/openapi.json is public, OpenAPI 3.1, API version 2, with ApiKeyAuth and every error code', async () => {
    const res = await request(`${url}/v2/openapi.json`, { key: null });
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
    assert.equal(res.body.info.version, '2');
    assert.deepEqual(res.body.components.securitySchemes.ApiKeyAuth, { type: 'apiKey', in: 'header', name: 'api-key' });
    assert.equal(res.body.paths['/v2/predict'].post.operationId, 'predict');
    assert.equal(res.body.paths['/v2/models/{model_id}/predict'].post.operationId, 'predict_with_model');
    assert.deepEqual(res.body.components.schemas.PredictRequest.required, ['image']);
  });

  test('Swagger UI and ReDoc pages and their assets are served locally', async () => {
    for (const [page, asset] of [
      ['/v2/docs', '/v2/docs/swagger-ui-bundle.js'],
      ['/v2/redoc', '/v2/redoc/redoc.standalone.js'],
    ] as const) {
      const html = await request(`${url}${page}`, { key: null });
      assert.equal(html.status, 200);
      assert.match(html.headers.get('content-type')!, /text\/html/);
      assert.ok(html.text.includes(asset));
      const js = await request(`${url}${asset}`, { key: null });
      assert.equal(js.status, 200);
      assert.ok(js.text.length > 100_000);
    }
  });
});
