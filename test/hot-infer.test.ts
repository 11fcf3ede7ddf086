// The OIP REST infer's front end (src/oip/hot-infer.ts): the front takes an infer the usual route would
// accept, its images crossing to the service as offsets into the body, which give back the very call
// the usual route reads; everything else takes the usual way (null); its answer's fields and body are
// the usual route's; a reading that cannot be copied to the service is dropped, the body going alone.
// The service's end and the answers on the wire: recorded-answers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { oipBinaryRequest } from '../bench/protocols';
import { parseJsonObject } from '../src/http/json-body';
import { callOf, hotInferRoutes, type InferArgs } from '../src/oip/hot-infer';
import { inferRestAnswer } from '../src/oip/answer-json';
import type { InferAnswer } from '../src/oip/infer';
import { createSlab, SlabWriter } from '../src/front/body-slab';
import { Places } from '../src/front/places';
import { BodyWay, ServiceExchange, ServiceLink, type RequestMessage, type ToService } from '../src/front/service-link';
import { parseInferRequest, splitBody } from '../src/oip/infer-request';

const routes = hotInferRoutes();
const image = Buffer.from('not really a photo, bytes all the same');
const binary = oipBinaryRequest(image);
const json = Buffer.from(JSON.stringify({ id: 'c1', inputs: [{ name: 'image', datatype: 'BYTES', shape: [1], data: [image.toString('base64')] }] }));
const fields = (extra: string[] = []) => ['content-type', 'application/json', 'api-key', 'k1', 'x-request-id', 'rid-1', ...extra];

function read(body: Buffer, target: string, f = fields(), method = 'POST') {
  return routes.prelude(method, target, f, '203.0.113.7', body, null);
}

test('binary and JSON infers, with and without a version: read as the usual route reads them', () => {
  const headerLength = binary.headers['inference-header-content-length']!;
  const cases: Array<[Buffer, string, string[], string | undefined]> = [
    [binary.body, '/v2/models/bc-v1/infer', fields(['inference-header-content-length', headerLength]), headerLength],
    [json, '/v2/models/bc-v1/versions/1.3.0/infer', fields(), undefined],
  ];
  for (const [body, target, f, length] of cases) {
    const hot = read(body, target, f);
    assert.ok(hot, target);
    assert.deepEqual([hot.route, hot.model, hot.requestId, hot.apiKey, hot.peer], [target.includes('versions') ? '/v2/models/:model_id/versions/:version/infer' : '/v2/models/:model_id/infer', 'bc-v1', 'rid-1', 'k1', '203.0.113.7']);
    const { json: header, binary: tail } = splitBody(body, length);
    const usual = parseInferRequest(parseJsonObject(header), tail, 'bc-v1', target.includes('versions') ? '1.3.0' : undefined);
    assert.deepEqual(callOf(hot.args as InferArgs, body), usual.call, target);
    // On the service's side the body is another view (a slab block): the images are found there again.
    const shared = Buffer.from(new SharedArrayBuffer(body.length + 64), 64, body.length);
    body.copy(shared);
    assert.deepEqual(callOf(hot.args as InferArgs, shared), usual.call, `${target}, seen in a slab`);
    assert.deepEqual((hot.args as InferArgs).binaryOutputs, usual.binaryOutputs);
  }
});

test('everything else takes the usual way', () => {
  const usual: Array<[string, ReturnType<typeof read>]> = [
    ['a query', read(json, '/v2/models/bc-v1/infer?x=1')],
    ['an encoded pack id', read(json, '/v2/models/bc%2Dv1/infer')],
    ['another method', read(json, '/v2/models/bc-v1/infer', fields(), 'PUT')],
    ['another content type, no header length', read(json, '/v2/models/bc-v1/infer', ['content-type', 'text/plain'])],
    ['a header length past the body', read(json, '/v2/models/bc-v1/infer', fields(['inference-header-content-length', '999999']))],
    ['malformed JSON', read(Buffer.from('{"inputs":'), '/v2/models/bc-v1/infer')],
    ['inputs not an array', read(Buffer.from('{"inputs":1}'), '/v2/models/bc-v1/infer')],
    ['a threshold that is no number', read(Buffer.from(JSON.stringify({ inputs: [], parameters: { threshold: [[1]] } })), '/v2/models/bc-v1/infer')],
  ];
  for (const [what, hot] of usual) assert.equal(hot, null, what);
});

test("the answer is the usual route's: its fields in order, then Server-Timing, and its body", () => {
  const answer: InferAnswer = { model: 'bc-v1', version: '1.3.0', id: 'c1', outputs: [{ name: 'detection', datatype: 'BYTES', shape: [1], values: ['detected'] }] };
  for (const binaryOutputs of [[], 'all'] as const) {
    const made = routes.answer({ route: '/v2/models/:model_id/infer', requestId: 'rid-1', serverTiming: 'total;dur=1.000', figures: { answer, binaryOutputs }, line: null });
    const usual = inferRestAnswer(answer, binaryOutputs, 'rid-1');
    const usualFields = Object.entries(usual.headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    assert.deepEqual(made, { status: '200 OK', fields: `${usualFields}Server-Timing: total;dur=1.000\r\n`, body: usual.body });
  }
});

test('a request whose reading cannot be copied to the service (nested too deep) goes with its body alone', () => {
  const posted: ToService[] = [];
  const deep = { route: '/v2/models/:model_id/infer', path: '/p', requestId: 'r', apiKey: undefined, peer: '', model: 'bc-v1', args: JSON.parse(`${'['.repeat(20_000)}${']'.repeat(20_000)}`) };
  const reader = { routes: [], prelude: () => deep, answer: () => ({ status: '', fields: '', body: '' }) };
  const link = new ServiceLink((message) => posted.push(structuredClone(message)), new SlabWriter(createSlab(1)), new Places({ places: 1, queue: 0, waitMs: 1000 }), reader);
  const exchange = new ServiceExchange(link, () => undefined);
  assert.ok(exchange.begin('POST\0/p\0\0', 4, BodyWay.Whole, () => reader.prelude(), () => undefined, () => assert.fail('no place')));
  exchange.write(Buffer.from('body'));
  exchange.uncork();
  assert.equal(posted.length, 1);
  assert.equal((posted[0] as RequestMessage).hot, null);
  assert.ok((posted[0] as RequestMessage).body, 'with its body');
});
