// One door to a version (src/packs/routed.ts) for scans and v1 video as for v2: through the real
// admin listener, a copy of bc-v1 (the scan model) and of bc-legacy with another version and the
// other default threshold is loaded as a canary at share 1; then a scan's result and every frame
// of a v1 video are answered by the canary, labelled by its threshold, and the scan's stored result
// names it. Without a canary, and back at standby, the serving version answers; with a shadow, the
// serving version answers and the shadow runs beside the scan and each frame.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { SQLITE_FILE } from '../src/store';
import { postJson, request } from './helpers/http';
import { parseMetrics, total, type Sample } from './helpers/metrics';
import { photo, repoRoot } from './helpers/paths';
import { createCredential, scanHeaders, storeEnv, waitForScan, type Credential } from './helpers/scan';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { catVideo } from './helpers/video';
import { waitFor } from './helpers/wait';

const ADMIN_KEY = 'admin-key-0123456789abcdef';
const CAT = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
const CANARY = '9.0.0';
const FRAMES = 4;

const manifestOf = (dir: string) => JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8'));

describe('scans and v1 video through the same routing as v2', () => {
  let models: string;
  let dataDir: string;
  let server: TestServer;
  let admin: string;
  let cred: Credential;
  let db: Database.Database;
  let video: string;
  const serving: Record<string, string> = {};
  /** Whether the serving version labels the scan photo and the video Happy: the canary's threshold is set to say the other. */
  const servingHappy = { scan: false, video: false };

  before(async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'cc-one-door-'));
    models = path.join(tmp, 'models');
    for (const id of ['bc-v1', 'bc-legacy']) {
      cpSync(path.join(repoRoot, 'models', id), path.join(models, id), { recursive: true });
      serving[id] = manifestOf(path.join(models, id)).version;
    }
    dataDir = path.join(tmp, 'data');
    const env = storeEnv(dataDir, null);
    server = await startServer({ ...env, CATCOMFORT_MODELS_DIR: models, CATCOMFORT_SCAN_MODEL: 'bc-v1', CATCOMFORT_ADMIN_PORT: '0', CATCOMFORT_ADMIN_KEYS: ADMIN_KEY });
    const port = await waitFor('the admin listening line', () => /"admin_port":(\d+)/.exec(server.output())?.[1]);
    admin = `http://127.0.0.1:${port}`;
    cred = createCredential(env, 'one-door');
    db = new Database(path.join(dataDir, SQLITE_FILE), { readonly: true, fileMustExist: true });
    video = catVideo().toString('base64');
  });
  after(async () => {
    db?.close();
    await server?.stop();
  });

  const packs = async (action: string, body: Record<string, unknown>) => {
    const res = await request(`${admin}/packs/${action}`, { key: null, headers: { Authorization: `Bearer ${ADMIN_KEY}` }, body: JSON.stringify(body) });
    assert.equal(res.status, 200, res.text);
    return res.body;
  };
  const metrics = async (): Promise<Sample[]> => parseMetrics(await (await fetch(`${server.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text());
  const answered = (samples: Sample[], model: string, version: string, role: string) =>
    total(samples, 'catcomfort_version_answers_total', { model, version, role });
  /** Images a shadow version was drawn for: compared with the serving answer, or skipped (busy, failed). */
  const shadowed = async (model: string) => {
    const samples = await metrics();
    const labels = { model, version: CANARY };
    return total(samples, 'catcomfort_shadow_comparisons_total', labels) + total(samples, 'catcomfort_shadow_skipped_total', labels);
  };

  /** One scan of the cat photo, finished: its answer and the result stored for it. */
  const scanCat = async () => {
    const res = await postJson(`${server.url}/scan`, { image: CAT }, scanHeaders(cred), null);
    assert.equal(res.status, 202, res.text);
    const scan = await waitForScan(server.url, res.body.scanId, cred);
    assert.equal(scan.status, 'COMPLETED', JSON.stringify(scan));
    const row = db.prepare('SELECT result FROM scans WHERE id = ?').get(scan.scanId) as { result: string };
    return { scan, stored: JSON.parse(row.result) };
  };
  /** One v1 video of FRAMES frames, answered with success. */
  const videoOf = async () => {
    const res = await postJson(`${server.url}/invocations/bc-legacy`, { media_type: 'video', media_data: { video, frames_to_analyze: FRAMES } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.success, true, res.text);
    assert.equal(res.body.additional_data.frames_extracted, FRAMES);
    return res.body;
  };
  const accessLines = (version: string) =>
    server.output().split('\n').filter((l) => l.includes('"route":"/invocations/bc-legacy"') && l.includes(`"model_version":"${version}"`)).length;

  /** A scan and a video, each answered by `version` in `role` (every frame of the video), the scan's result recording it. */
  async function answeredBy(role: 'serving' | 'canary', version: { 'bc-v1': string; 'bc-legacy': string }) {
    const before = await metrics();
    const { scan, stored } = await scanCat();
    assert.equal(stored.packVersion, version['bc-v1'], 'the stored result names the version that answered');
    assert.deepEqual(scan.model, { id: 'bc-v1', version: stored.modelVersion }, 'the answer keeps its model: the id and the service version');
    const linesBefore = accessLines(version['bc-legacy']);
    const answer = await videoOf();
    const after = await metrics();
    assert.equal(answered(after, 'bc-v1', version['bc-v1'], role) - answered(before, 'bc-v1', version['bc-v1'], role), 1, `the scan answered by bc-v1@${version['bc-v1']} (${role})`);
    const scans = total(after, 'catcomfort_version_answers_total', { model: 'bc-v1' }) - total(before, 'catcomfort_version_answers_total', { model: 'bc-v1' });
    assert.equal(scans, 1, 'the scan answered once, by no other version');
    const frames = answered(after, 'bc-legacy', version['bc-legacy'], role) - answered(before, 'bc-legacy', version['bc-legacy'], role);
    assert.equal(frames, FRAMES, `every frame answered by bc-legacy@${version['bc-legacy']} (${role})`);
    const all = total(after, 'catcomfort_version_answers_total', { model: 'bc-legacy' }) - total(before, 'catcomfort_version_answers_total', { model: 'bc-legacy' });
    assert.equal(all, FRAMES, 'no frame answered by another version');
    await waitFor(`the video's access line naming bc-legacy@${version['bc-legacy']}`, () => accessLines(version['bc-legacy']) === linesBefore + 1);
    return { scan, video: answer };
  }

  test('without a canary, a scan and every frame of a video are answered by the serving version', async () => {
    const { scan, video: answer } = await answeredBy('serving', { 'bc-v1': serving['bc-v1']!, 'bc-legacy': serving['bc-legacy']! });
    servingHappy.scan = scan.isHappy;
    servingHappy.video = answer.prediction === 'Happy';
  });

  test('a canary at share 1 answers every scan and every frame of a video, labelled by its own default threshold', async () => {
    for (const [id, happy] of [['bc-v1', servingHappy.scan], ['bc-legacy', servingHappy.video]] as const) {
      const dir = path.join(models, `${id}@${CANARY}`);
      cpSync(path.join(models, id), dir, { recursive: true });
      // The same networks (the same scores), with the threshold that gives the other label: 0 says Unhappy, 1 Happy.
      writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ ...manifestOf(dir), version: CANARY, defaultThreshold: happy ? 0 : 1 }));
      assert.equal((await packs('load', { dir, role: 'canary', share: 1 })).versions, `${serving[id]} serving, ${CANARY} canary 100%`);
    }
    const { scan, video: answer } = await answeredBy('canary', { 'bc-v1': CANARY, 'bc-legacy': CANARY });
    assert.equal(scan.isHappy, !servingHappy.scan, "the scan labelled by the canary's threshold");
    assert.equal(answer.prediction, servingHappy.video ? 'Unhappy' : 'Happy', "the video labelled by the canary's threshold");
  });

  test('a shadow runs beside a scan and beside each frame of a video; the serving version answers', async () => {
    for (const id of ['bc-v1', 'bc-legacy']) await packs('route', { pack: `${id}@${CANARY}`, role: 'shadow' });
    const [scanBefore, videoBefore] = [await shadowed('bc-v1'), await shadowed('bc-legacy')];
    await answeredBy('serving', { 'bc-v1': serving['bc-v1']!, 'bc-legacy': serving['bc-legacy']! });
    await waitFor('the shadow drawn for the scan and for each frame', async () => (await shadowed('bc-v1')) === scanBefore + 1 && (await shadowed('bc-legacy')) === videoBefore + FRAMES);
  });

  test('back at standby (no share), the serving version answers scans and video again', async () => {
    for (const id of ['bc-v1', 'bc-legacy']) await packs('route', { pack: `${id}@${CANARY}`, role: 'standby' });
    const { scan, video: answer } = await answeredBy('serving', { 'bc-v1': serving['bc-v1']!, 'bc-legacy': serving['bc-legacy']! });
    assert.equal(scan.isHappy, servingHappy.scan);
    assert.equal(answer.prediction === 'Happy', servingHappy.video);
  });
});
