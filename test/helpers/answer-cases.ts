// Raw requests whose answers were recorded from the service before the HTTP edge had one way
// (test/fixtures/answers/recorded.json, written by test/helpers/record-answers.ts): every kind of
// request the public port takes (bodiless, HEAD, HTTP/1.0, chunked, Expect, over the limit, pipelined,
// each interface and its errors, the front's own refusals). test/recorded-answers.test.ts asks them again.
import { readFileSync } from 'node:fs';
import { oipBinaryRequest } from '../../bench/protocols';
import { photo } from './paths';
import { TEST_KEY } from './server';

export interface AnswerCase {
  name: string;
  pieces: Array<string | Buffer>;
  /** The connection closes after the answers (else: this many answers are awaited). */
  closes?: boolean;
  answers?: number;
  /** Which answers answer HEAD requests (no body). */
  bodiless?: boolean[];
}

const K = `api-key: ${TEST_KEY}\r\n`;
const jpeg = readFileSync(photo('007_oxford_Siamese_151.jpg'));
const json = JSON.stringify({ image: jpeg.toString('base64') });
const oip = oipBinaryRequest(jpeg);
const v1 = JSON.stringify({ media_data: { image: jpeg.toString('base64') } });
const predict = (extra = '', version = 'HTTP/1.1', host = 'Host: x\r\n') =>
  `POST /v2/predict ${version}\r\n${host}X-Request-ID: rid\r\n${K}Content-Type: application/json\r\n${extra}Content-Length: ${json.length}\r\n\r\n${json}`;
/** A JSON POST of `text` to `path`, with the key. */
const post = (path: string, text: string) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
/** A v2 predict of `text` as its body, at `path`. */
const body = (text: string, path = '/v2/predict') =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Request-ID: rid\r\n${K}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
const chunked = (text: string) => `${text.length.toString(16)}\r\n${text}\r\n0\r\n\r\n`;
/** Over the default body limit (8 MiB), under the most the service reads and drops (64 MiB). */
const OVER = 9 * 1024 * 1024;

export const ANSWER_CASES: AnswerCase[] = [
  { name: 'GET /healthz', pieces: ['GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'GET /readyz', pieces: ['GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'GET /ping (v1)', pieces: ['GET /ping HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'HEAD /healthz, then GET', pieces: ['HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'], answers: 2, bodiless: [true, false] },
  { name: 'HTTP/1.0 GET without Host', pieces: ['GET /healthz HTTP/1.0\r\n\r\n'], closes: true },
  { name: 'HTTP/1.0 GET keep-alive', pieces: ['GET /v2/health/live HTTP/1.0\r\nConnection: keep-alive\r\n\r\n'] },
  { name: 'GET /v2/models/bc-v1 (OIP metadata)', pieces: [`GET /v2/models/bc-v1 HTTP/1.1\r\nHost: x\r\n${K}\r\n`] },
  { name: 'GET /v2/models/bc-v1/ready', pieces: [`GET /v2/models/bc-v1/ready HTTP/1.1\r\nHost: x\r\n${K}\r\n`] },
  { name: 'GET on no route', pieces: ['GET /nowhere?x=1 HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'GET /v2 on no route, with a query', pieces: ['GET /v2/nowhere?x=1 HTTP/1.1\r\nHost: x\r\nX-Request-ID: rid\r\n\r\n'] },
  { name: 'DELETE on a pack route (405)', pieces: ['DELETE /v2/models/bc-v1/infer HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'BREW on a pack route (405 from the front)', pieces: ['BREW /v2/models/bc-v1/infer HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'BREW elsewhere (501)', pieces: ['BREW /nowhere HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'OPTIONS /v2/predict', pieces: ['OPTIONS /v2/predict HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'predict', pieces: [predict()] },
  { name: 'predict, explain, head and body apart', pieces: [predict().replace('/v2/predict', '/v2/predict?explain=true').slice(0, -json.length), json.slice(0, 5000), json.slice(5000)] },
  { name: 'predict, chunked', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\nX-Request-ID: rid\r\n${K}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(json)}`] },
  { name: 'predict, chunked, empty', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\nX-Request-ID: rid\r\n${K}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`] },
  { name: 'predict, chunked, Expect: 100-continue', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\nX-Request-ID: rid\r\n${K}Content-Type: application/json\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(json)}`] },
  { name: 'predict, Expect: 100-continue', pieces: [predict('Expect: 100-continue\r\n')] },
  { name: 'predict, HTTP/1.0', pieces: [predict('', 'HTTP/1.0', '')], closes: true },
  { name: 'predict, HTTP/1.0 keep-alive', pieces: [predict('Connection: keep-alive\r\n', 'HTTP/1.0', '')] },
  { name: 'predict, Connection: close', pieces: [predict('Connection: close\r\n')], closes: true },
  { name: 'two predicts pipelined', pieces: [predict().repeat(2)], answers: 2 },
  { name: 'predict, a wrong key', pieces: [predict().replace(K, 'api-key: wrong-key-0123456789\r\n')] },
  { name: 'predict, no key', pieces: [predict().replace(K, '')] },
  { name: 'predict, malformed JSON', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\nX-Request-ID: rid\r\n${K}Content-Type: application/json\r\nContent-Length: 9\r\n\r\n{"image":`] },
  { name: 'predict, text/plain', pieces: [predict().replace('application/json', 'text/plain')] },
  { name: 'predict, no body', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\nX-Request-ID: rid\r\n${K}Content-Type: application/json\r\n\r\n`] },
  { name: 'predict, over the body limit (read and dropped)', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\nX-Request-ID: rid\r\n${K}Content-Type: application/json\r\nContent-Length: ${OVER}\r\n\r\n`, Buffer.alloc(OVER, 0x20)] },
  { name: 'predict, over the limit with Expect (413 from the front)', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\nX-Request-ID: rid\r\n${K}Expect: 100-continue\r\nContent-Length: ${OVER}\r\n\r\n`], closes: true },
  { name: 'predict, a threshold', pieces: [body(JSON.stringify({ image: jpeg.toString('base64'), threshold: 0.9 }))] },
  { name: 'predict, an image not in base64', pieces: [body('{"image":"@@@@"}')] },
  { name: 'predict, base64 of no image', pieces: [body(JSON.stringify({ image: Buffer.from('hello, not a photo').toString('base64') }))] },
  { name: 'predict, a raw control byte in the image', pieces: [body('{"image":"aGVsbG8\x01"}')] },
  { name: 'predict, a threshold out of range', pieces: [body(JSON.stringify({ image: jpeg.toString('base64'), threshold: 2 }))] },
  { name: 'predict, an unknown pack', pieces: [body(json, '/v2/models/nope/predict')] },
  { name: 'predict, X-Request-ID and api-key twice', pieces: [predict(`X-Request-ID: second\r\napi-key: wrong-key-0123456789\r\n${K}`)] },
  { name: 'model-pinned predict', pieces: [predict().replace('/v2/predict', '/v2/models/bc-v1/predict')] },
  { name: 'OIP binary infer', pieces: [Buffer.concat([Buffer.from(`POST /v2/models/bc-v1/infer HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/octet-stream\r\nInference-Header-Content-Length: ${oip.headers['inference-header-content-length']}\r\nContent-Length: ${oip.body.length}\r\n\r\n`), oip.body])] },
  { name: 'OIP infer, JSON data, a version, binary outputs', pieces: [post('/v2/models/bc-v1/versions/1.3.0/infer', JSON.stringify({ id: 'call-1', inputs: [{ name: 'image', datatype: 'BYTES', shape: [1], data: [jpeg.toString('base64')] }], outputs: [{ name: 'box' }, { name: 'detection', parameters: { binary_data: true } }] }))] },
  { name: 'OIP infer, not an image', pieces: [post('/v2/models/bc-v1/infer', JSON.stringify({ inputs: [{ name: 'image', datatype: 'BYTES', shape: [1], data: [Buffer.from('hello').toString('base64')] }] }))] },
  { name: 'OIP infer, a version not loaded', pieces: [post('/v2/models/bc-v1/versions/9.9.9/infer', JSON.stringify({ inputs: [{ name: 'image', datatype: 'BYTES', shape: [1], data: [jpeg.toString('base64')] }] }))] },
  { name: 'OIP infer, a wrong input name', pieces: [post('/v2/models/bc-v1/infer', JSON.stringify({ inputs: [{ name: 'img', datatype: 'BYTES', shape: [1], data: [jpeg.toString('base64')] }] }))] },
  { name: 'OIP infer, a threshold nested too deep to copy', pieces: [post('/v2/models/bc-v1/infer', `{"inputs":[{"name":"image","datatype":"BYTES","shape":[1],"data":["AAAA"]}],"parameters":{"threshold":${'['.repeat(20_000)}${']'.repeat(20_000)}}}`)] },
  { name: 'OIP infer, invalid JSON', pieces: [`POST /v2/models/bc-v1/infer HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`] },
  { name: 'v1 /invocations', pieces: [`POST /invocations?threshold=0.5 HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: ${v1.length}\r\n\r\n${v1}`] },
  { name: 'v1 /invocations, a video', pieces: [`POST /invocations HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: 48\r\n\r\n{"media_type":"video","media_data":{"video":""}}`] },
  { name: 'v1 /invocations, not JSON', pieces: [`POST /invocations HTTP/1.1\r\nHost: x\r\n${K}Content-Type: image/jpeg\r\nContent-Length: 5\r\n\r\nhello`] },
  { name: 'POST to no route', pieces: [`POST /v2/nowhere HTTP/1.1\r\nHost: x\r\n${K}Content-Length: 2\r\n\r\n{}`] },
  { name: 'two Content-Length (400 from the front)', pieces: ['POST /v2/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'], closes: true },
  { name: 'HTTP/2.0 (505 from the front)', pieces: ['GET / HTTP/2.0\r\nHost: x\r\n\r\n'], closes: true },
  { name: 'GET /openapi.json', pieces: ['GET /v2/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'GET /inspect', pieces: ['GET /inspect HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'GET /scan/nowhere', pieces: ['GET /scan/nowhere HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'POST /scan without a key', pieces: ['POST /scan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}'] },
];
