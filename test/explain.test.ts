// v2's opt-ins on the predict operations, on the real service and real photos: `explain=true` adds
// `explanation` after the usual keys and changes none of their bytes, answers without it are the
// spec's keys only, `pack_version` names the answering version, and the OpenAPI document describes
// both while PredictResponse stays as it was.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { request } from './helpers/http';
import { photo, repoRoot } from './helpers/paths';
import { startServer, type TestServer } from './helpers/server';
import { jsonSchema } from '../src/http/docs/openapi-util';
import { PredictResponse } from '../src/v2/schemas';

const CAT = '000_skimage_chelsea.png';
const DOG = '070_darknet_dog.jpg';
const TWO_CATS = '041_ggoni_cats_couch.jpg';
const manifest = JSON.parse(readFileSync(`${repoRoot}/models/bc-v1/manifest.json`, 'utf8'));

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

/** The raw answer text for `file`, with a fixed request id so that two answers can be compared byte for byte. */
async function ask(file: string, query = '', body: Record<string, unknown> = {}) {
  const image = readFileSync(photo(file)).toString('base64');
  return request(`${server.url}/v2/models/bc-v1/predict${query}`, { method: 'POST', body: JSON.stringify({ image, ...body }), headers: { 'x-request-id': 'explain-test' } });
}

describe('explain=true', () => {
  test('without the opt-in (or with explain=false) the answer has the spec keys only; with it, the same bytes and then explanation', async () => {
    for (const [file, threshold] of [[CAT, {}], [CAT, { threshold: 0.5 }], [DOG, {}]] as const) {
      const plain = await ask(file, '', threshold);
      assert.equal(plain.status, 200, plain.text);
      assert.deepEqual(Object.keys(plain.body), ['request_id', 'model', 'detection', 'prediction', 'cat', 'image']);
      assert.equal((await ask(file, '?explain=false', threshold)).text, plain.text);
      const explained = await ask(file, '?explain=true', threshold);
      assert.ok(explained.text.startsWith(`${plain.text.slice(0, -1)},"explanation":{`), explained.text);
    }
  });

  test('a detected cat: its candidate is the answer\'s cat, chosen, with the verifier\'s reading; the pack\'s cutoffs', async () => {
    const { body } = await ask(CAT, '?explain=true');
    assert.equal(body.detection, 'detected');
    const [chosen, ...others] = body.explanation.candidates;
    assert.deepEqual(others, []);
    assert.deepEqual(chosen.bounding_box, body.cat.bounding_box);
    assert.equal(chosen.detection_confidence, body.cat.detection_confidence);
    assert.equal(chosen.outcome, 'chosen');
    assert.ok(chosen.raw_score > 0 && chosen.raw_score < 1);
    assert.equal(chosen.verifier.passed, true);
    assert.ok(chosen.verifier.cat_mass > chosen.verifier.dog_mass);
    assert.deepEqual(body.explanation.cutoffs, { detected: manifest.cutoffs.detected, low_confidence: manifest.cutoffs.lowConfidence });
    assert.deepEqual(body.explanation.verifier, { checked: 1, max_candidates: manifest.verifier.maxCandidates, max_lookalike_mass: manifest.verifier.rule.maxLookalikeMass });
  });

  test('a dog: not_detected, and the best candidate is shown with why it was not reported', async () => {
    const { body } = await ask(DOG, '?explain=true');
    assert.equal(body.detection, 'not_detected');
    assert.equal(body.cat, null);
    const [candidate] = body.explanation.candidates;
    assert.equal(candidate.outcome, 'below_low_confidence_cutoff');
    assert.ok(candidate.detection_confidence < manifest.cutoffs.lowConfidence);
    assert.equal(candidate.verifier, null);
    assert.equal(body.explanation.verifier.checked, 0);
  });

  test('two cats on a couch: every candidate the detector proposed, best first, each with its outcome and the verifier\'s reading', async () => {
    const { body } = await ask(TWO_CATS, '?explain=true');
    assert.equal(body.detection, 'detected');
    const candidates = body.explanation.candidates;
    assert.ok(candidates.length >= 2 && candidates.length <= manifest.verifier.maxCandidates, JSON.stringify(candidates));
    const confidences = candidates.map((c: any) => c.detection_confidence);
    assert.deepEqual(confidences, [...confidences].sort((a: number, b: number) => b - a), 'best first');
    assert.deepEqual(candidates.filter((c: any) => c.outcome === 'chosen').map((c: any) => c.bounding_box), [body.cat.bounding_box]);
    const second = candidates[1];
    assert.equal(second.outcome, 'another_chosen', 'the second cat passed the verifier; the first was chosen');
    assert.equal(second.verifier.passed, true);
    const read = candidates.filter((c: any) => c.verifier !== null);
    assert.equal(body.explanation.verifier.checked, read.length, 'the verifier read those with a reading');
    for (const c of candidates.filter((c: any) => c.verifier === null)) assert.ok(c.detection_confidence < manifest.cutoffs.detected, 'unread ones are below the detected cutoff');
  });

  test('explain other than true or false is a 422 on field explain', async () => {
    const res = await ask(CAT, '?explain=yes');
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.error.details.errors, [{ field: 'explain', message: 'Input should be a valid boolean' }]);
  });
});

describe('pack_version', () => {
  test('the serving version answers when named; an unknown version is 404 model_not_found', async () => {
    const serving = manifest.version;
    const named = await ask(CAT, `?pack_version=${serving}`);
    assert.equal(named.status, 200, named.text);
    assert.equal(named.body.model.pack_version, serving);
    assert.equal(named.text, (await ask(CAT)).text);
    const unknown = await ask(CAT, '?pack_version=9.9.9');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'model_not_found');
    assert.deepEqual(unknown.body.error.details, { model_id: 'bc-v1', version: '9.9.9' });
  });
});

describe('the v2 OpenAPI document', () => {
  test('documents both opt-ins and the explanation, and keeps PredictResponse as its schema writes it', async () => {
    const doc = (await request(`${server.url}/v2/openapi.json`, { key: null })).body;
    for (const path of ['/v2/predict', '/v2/models/{model_id}/predict']) {
      const op = doc.paths[path].post;
      const query = op.parameters.filter((p: any) => p.in === 'query').map((p: any) => [p.name, p.schema.type]);
      assert.deepEqual(query, [['explain', 'boolean'], ['pack_version', 'string']], path);
      const schema = op.responses['200'].content['application/json'].schema;
      assert.deepEqual(schema.allOf[0], { $ref: '#/components/schemas/PredictResponse' });
      assert.deepEqual(schema.allOf[1].properties.explanation, { $ref: '#/components/schemas/PredictExplanation' });
    }
    assert.deepEqual(doc.components.schemas.PredictResponse, jsonSchema(PredictResponse));
    assert.deepEqual(doc.components.schemas.PredictExplanation.required, ['candidates', 'cutoffs', 'verifier']);
  });
});
