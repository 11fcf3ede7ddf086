// Every kind of request the public port takes (test/helpers/answer-cases.ts) gets the answer it got
// before the HTTP edge had one way (test/fixtures/answers/recorded.json, recorded at bd45cd4, with
// the relay to uWS, before the one way), with the front on the main thread and on two threads: the same status, fields,
// field order, bodies and connection fate, byte for byte but for what differs between runs (see
// helpers/recorded.ts). GET /inspect was recorded again when the page gained its live camera (issue 58).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ANSWER_CASES } from './helpers/answer-cases';
import { repoRoot } from './helpers/paths';
import { askCase, type RecordedAnswer } from './helpers/recorded';
import { startServer, type TestServer } from './helpers/server';

const recorded = JSON.parse(readFileSync(path.join(repoRoot, 'test/fixtures/answers/recorded.json'), 'utf8')) as Record<string, RecordedAnswer>;

let one: TestServer;
let two: TestServer;
before(async () => {
  [one, two] = await Promise.all([startServer({ CATCOMFORT_HTTP_THREADS: '1' }), startServer({ CATCOMFORT_HTTP_THREADS: '2' })]);
});
after(() => Promise.all([one?.stop(), two?.stop()]));

test('every case was recorded', () => {
  assert.deepEqual(Object.keys(recorded), ANSWER_CASES.map((c) => c.name));
});

for (const threads of [1, 2]) {
  test(`with the front on ${threads === 1 ? 'the main thread' : 'two threads'}, every recorded request gets its recorded answer`, async () => {
    const server = threads === 1 ? one : two;
    for (const c of ANSWER_CASES) assert.deepEqual(await askCase(server.port, c), recorded[c.name], c.name);
  });
}
