// The predict routes' front end (src/v2/hot-predict.ts): the front takes a predict the usual route
// would accept, reading what the service needs (route, pack, key, request id, threshold, where the
// image lies), and leaves everything else to the usual way (null); its answer's body is the usual
// route's (v2/predict-response.ts). The service's end and the answers on the wire: recorded-answers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IMAGE_MEMBER, locateMember } from '../src/http/json-image';
import { hotRoutes } from '../src/v2/hot-predict';
import { predictResponse, type PredictFigures } from '../src/v2/predict-response';

const routes = hotRoutes({ serviceVersion: '9.9.9', defaultModel: 'bc-v1' });
const FIELDS = ['host', 'x', 'content-type', 'application/json', 'api-key', 'k1', 'x-request-id', 'rid-1'];

function read(body: string, target = '/v2/predict', fields = FIELDS, method = 'POST') {
  const bytes = Buffer.from(body);
  return routes.prelude(method, target, fields, '203.0.113.7', bytes, locateMember(bytes, IMAGE_MEMBER));
}

test('a predict the usual route would take: route, pack, key, request id, threshold and the image bytes', () => {
  const body = '{"threshold":0.25,"image":"aGVsbG8="}';
  const hot = read(body);
  const args = { threshold: 0.25, imageStart: body.indexOf('aGVs'), imageEnd: body.indexOf('aGVs') + 8 };
  assert.deepEqual(hot, { route: '/v2/predict', model: 'bc-v1', path: '/v2/predict', requestId: 'rid-1', apiKey: 'k1', peer: '203.0.113.7', args });
  assert.equal(Buffer.from(body).subarray(args.imageStart, args.imageEnd).toString(), 'aGVsbG8=');
  const pinned = read('{"image":"aGVsbG8="}', '/v2/models/bc-legacy/predict');
  assert.deepEqual(pinned, { ...read('{"image":"aGVsbG8="}'), route: '/v2/models/:model_id/predict', model: 'bc-legacy', path: '/v2/models/bc-legacy/predict' });
  assert.deepEqual((pinned!.args as { threshold: unknown }).threshold, null);
});

test('the last of a repeated field counts, as in the service; no X-Request-ID gets a new id; no Content-Type is JSON; unknown members are ignored', () => {
  const hot = read('{"image":"aGVsbG8="}', '/v2/predict', [...FIELDS, 'api-key', 'k2', 'x-request-id', 'rid-2']);
  assert.deepEqual([hot?.apiKey, hot?.requestId], ['k2', 'rid-2']);
  const fresh = read('{"image":"aGVsbG8="}', '/v2/predict', FIELDS.slice(0, 6));
  assert.match(fresh!.requestId, /^[0-9a-f-]{36}$/);
  assert.notEqual(read('{"image":"aGVsbG8="}', '/v2/predict', []), null, 'no content type is JSON to the usual route too');
  assert.notEqual(read('{"image":"aGVsbG8=","extra":1}'), null, 'unknown members are ignored by the usual route too');
});

test('everything else takes the usual way', () => {
  const image = '{"image":"aGVsbG8="}';
  const usual: Array<[string, ReturnType<typeof read>]> = [
    ['a query (opt-ins)', read(image, '/v2/predict?explain=true')],
    ['another route', read(image, '/v2/models/bc-v1/infer')],
    ['an encoded pack id', read(image, '/v2/models/bc%2Dv1/predict')],
    ['another method', read(image, '/v2/predict', FIELDS, 'PUT')],
    ['another content type', read(image, '/v2/predict', ['content-type', 'text/plain'])],
    ['no image member', read('{"threshold":0.5}')],
    ['an image that is not a string', read('{"image":12}')],
    ['a threshold out of range', read('{"image":"aGVsbG8=","threshold":2}')],
    ['malformed JSON around the image', read('{"image":"aGVsbG8=",}')],
  ];
  for (const [what, hot] of usual) assert.equal(hot, null, what);
});

test("the answer is the usual route's: fields in its order, its body", () => {
  const figures: PredictFigures = { modelId: 'bc-v1', packVersion: '1.3.0', detection: 'detected', score: 0.75, threshold: 0.5, cat: [1, 2, 3, 4, 0.9], width: 10, height: 20 };
  const answer = routes.answer({ requestId: 'rid-1', serverTiming: 'total;dur=1.000', figures, line: null });
  assert.deepEqual(answer, {
    status: '200 OK',
    fields: 'Content-Type: application/json\r\nX-Request-ID: rid-1\r\nServer-Timing: total;dur=1.000\r\n',
    body: JSON.stringify(predictResponse({ serviceVersion: '9.9.9' }, figures, 'rid-1')),
  });
  assert.equal(JSON.parse(answer.body).prediction.label, 'discomfort');
});
