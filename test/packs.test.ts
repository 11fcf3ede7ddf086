// Pack versions changed while serving, through the real admin listener and the real `catcomfort
// packs` command: a version trained by train-head in the test is loaded, shadowed, canaried at 50 %,
// promoted and rolled back while 32 clients send requests without pause; corrupt packs are refused;
// admin and API keys stay apart; two instances on one PostgreSQL converge after a promotion, and
// end in one state, shown by the fleet view, after actions raced on both and an unload then a load.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createHash } from 'node:crypto';
import { request, postJson } from './helpers/http';
import { parseMetrics, total } from './helpers/metrics';
import { photo, repoRoot } from './helpers/paths';
import { usePostgres, type TestPostgres } from './helpers/postgres';
import { cli, storeEnv } from './helpers/scan';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const ADMIN_KEY = 'admin-key-0123456789abcdef';
const CAT = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
const LABELS = {
  discomfort: ['004_oxford_Persian_163.jpg', '005_oxford_British_Shorthair_139.jpg', '006_oxford_Maine_Coon_144.jpg', '007_oxford_Siamese_151.jpg'],
  comfort: ['018_oxford_Abyssinian_13.jpg', '019_oxford_Bengal_109.jpg', '020_oxford_Egyptian_Mau_10.jpg', '021_oxford_British_Shorthair_113.jpg'],
};

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(repoRoot, 'dist/src/cli/main.js'), ...args], { env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A models folder with bc-v1 and bc-legacy, and bc-v1@2.0.0 trained by train-head beside them. */
async function modelsWithTrainedVersion(): Promise<string> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cc-packs-'));
  const models = path.join(tmp, 'models');
  for (const id of ['bc-v1', 'bc-legacy']) cpSync(path.join(repoRoot, 'models', id), path.join(models, id), { recursive: true });
  const csv = path.join(tmp, 'labels.csv');
  const lines = Object.entries(LABELS).flatMap(([label, files]) => files.map((f) => `${photo(f)},${label}`));
  writeFileSync(csv, `path,label\n${lines.join('\n')}\n`);
  const trained = await run(['train-head', '--data', csv, '--out', path.join(models, 'bc-v1@2.0.0'), '--id', 'bc-v1', '--version', '2.0.0', '--cache', path.join(tmp, 'cache')]);
  assert.equal(trained.code, 0, trained.stderr);
  return models;
}

function adminPort(server: TestServer): Promise<number> {
  return waitFor('the admin listening line', () => {
    const m = /"admin_port":(\d+)/.exec(server.output());
    return m ? Number(m[1]) : null;
  });
}

const servingVersion = (models: any[], id: string) => models.find((m) => m.id === id).pack_version;

describe('pack versions while serving', () => {
  let models: string;
  let server: TestServer;
  let env: Record<string, string>;
  let packs: (...args: string[]) => Promise<{ code: number; stdout: string; stderr: string }>;
  let issuedAdmin: string;
  let issuedApi: string;

  before(async () => {
    models = await modelsWithTrainedVersion();
    const data = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-packs-data-')), null);
    issuedAdmin = /admin key: (\S+)/.exec(cli(data, 'keys', 'create', '--name', 'ops', '--admin'))![1]!;
    issuedApi = /api key: (\S+)/.exec(cli(data, 'keys', 'create', '--name', 'partner'))![1]!;
    env = { ...data, CATCOMFORT_MODELS_DIR: models, CATCOMFORT_ADMIN_PORT: '0', CATCOMFORT_ADMIN_KEYS: ADMIN_KEY };
    server = await startServer(env);
    const url = `http://127.0.0.1:${await adminPort(server)}`;
    packs = (...args) => run(['packs', ...args], { CATCOMFORT_ADMIN_URL: url, CATCOMFORT_ADMIN_KEY: ADMIN_KEY });
  });
  after(() => server?.stop());

  test('32 clients without pause through load, shadow, canary 50 %, promote and rollback: all 2xx, each answer from a version serving then', async () => {
    type Answer = { start: number; end: number; status: number; version: string | null };
    const answers: Answer[] = [];
    const ready: number[] = [];
    let stop = false;
    const client = async () => {
      while (!stop) {
        const start = performance.now();
        const res = await postJson(`${server.url}/v2/predict`, { image: CAT });
        answers.push({ start, end: performance.now(), status: res.status, version: res.body?.model?.pack_version ?? null });
      }
    };
    const readiness = async () => {
      while (!stop) ready.push((await request(`${server.url}/readyz`, { key: null })).status);
    };
    const clients = [...Array.from({ length: 32 }, client), readiness()];
    // Each step: [command, versions answering once it is done]. Before the first: 1.3.0 alone.
    const steps: Array<[string[], string[]]> = [
      [['load', path.join(models, 'bc-v1@2.0.0')], ['1.3.0']],
      [['route', 'bc-v1@2.0.0', '--shadow'], ['1.3.0']],
      [['route', 'bc-v1@2.0.0', '--canary', '50%'], ['1.3.0', '2.0.0']],
      [['promote', 'bc-v1@2.0.0'], ['2.0.0']],
      [['rollback', 'bc-v1'], ['1.3.0']],
    ];
    const phases: Array<{ from: number; to: number; versions: string[] }> = [];
    let previous = { at: performance.now(), versions: ['1.3.0'] };
    const roles: string[] = [];
    try {
      await waitFor('answers before the first step', () => answers.length >= 64);
      for (const [args, versions] of steps) {
        const began = performance.now();
        phases.push({ from: previous.at, to: began, versions: previous.versions });
        const done = await packs(...args);
        assert.equal(done.code, 0, `${args.join(' ')}: ${done.stderr}`);
        const ended = performance.now();
        phases.push({ from: began, to: ended, versions: [...new Set([...previous.versions, ...versions])] }); // the change lands within the call
        previous = { at: ended, versions };
        roles.push(done.stdout.trim());
        const count = answers.length;
        await waitFor('answers after the step', () => answers.length >= count + 64);
        if (args.includes('--canary')) {
          const list = await request(`${server.url}/v2/models`);
          const bc = list.body.models.find((m: any) => m.id === 'bc-v1');
          assert.deepEqual(bc.versions.map((v: any) => [v.pack_version, v.role, v.share]), [['1.3.0', 'serving', 0], ['2.0.0', 'canary', 0.5]]);
          await waitFor('the canary answering', () => answers.filter((a) => a.start > ended && a.version === '2.0.0').length >= 8);
        }
      }
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    phases.push({ from: previous.at, to: Infinity, versions: previous.versions });
    assert.deepEqual(roles, [
      'bc-v1: 1.3.0 serving, 2.0.0 standby',
      'bc-v1: 1.3.0 serving, 2.0.0 shadow',
      'bc-v1: 1.3.0 serving, 2.0.0 canary 50%',
      'bc-v1: 2.0.0 serving, 1.3.0 previous',
      'bc-v1: 1.3.0 serving, 2.0.0 previous',
    ]);
    const failed = answers.filter((a) => a.status !== 200);
    assert.equal(failed.length, 0, `non-2xx answers: ${JSON.stringify(failed.slice(0, 3))}`);
    assert.deepEqual([...new Set(ready)], [200], '/readyz stayed 200');
    for (const a of answers) {
      const allowed = new Set(phases.filter((p) => p.from <= a.end && a.start <= p.to).flatMap((p) => p.versions));
      assert.ok(allowed.has(a.version!), `an answer from ${a.version} between ${a.start} and ${a.end}; serving then: ${[...allowed]}`);
    }
    assert.ok(answers.some((a) => a.version === '2.0.0'), 'the new version answered');
    const samples = parseMetrics(await (await fetch(`${server.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text());
    assert.ok(total(samples, 'catcomfort_shadow_skipped_total', { model: 'bc-v1', version: '2.0.0', reason: 'busy' }) > 0, 'the shadow yielded to 32 clients');
    assert.ok(total(samples, 'catcomfort_version_answers_total', { model: 'bc-v1', version: '2.0.0', role: 'canary' }) > 0);
    const readyz = (await request(`${server.url}/readyz`, { key: null })).body;
    assert.deepEqual(readyz.versions['bc-v1'], { '1.3.0': 'serving', '2.0.0': 'previous' });
    // One audit line per action, naming the admin key's id and never the key.
    const audit = server.output().split('\n').filter((l) => l.includes('"msg":"admin action"'));
    assert.equal(audit.length, steps.length);
    const keyId = `env-${createHash('sha256').update(ADMIN_KEY).digest('hex').slice(0, 12)}`;
    for (const line of audit) assert.equal(JSON.parse(line).key_id, keyId);
    assert.ok(!server.output().includes(ADMIN_KEY));
    // The access log names the version that answered.
    assert.ok(server.output().split('\n').some((l) => l.includes('"route":"/v2/predict"') && l.includes('"model_version":"2.0.0"')));
  });

  test('a shadow runs from spare capacity: one client at a time gets comparisons, and its answers stay the serving version', async () => {
    assert.equal((await packs('route', 'bc-v1@2.0.0', '--shadow')).code, 0);
    const compared = async () => total(parseMetrics(await (await fetch(`${server.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text()), 'catcomfort_shadow_latency_seconds_count', { version: '2.0.0' });
    const before = await compared();
    await waitFor('shadow comparisons with one client', async () => {
      const res = await postJson(`${server.url}/v2/predict`, { image: CAT });
      assert.equal(res.body.model.pack_version, '1.3.0');
      return (await compared()) >= before + 3;
    }, { intervalMs: 1 });
    assert.equal((await packs('route', 'bc-v1@2.0.0', '--standby')).code, 0);
  });

  test('a shadow runs beside its share of requests: --shadow P% (default all), listed with it; bad shares are usage errors', async () => {
    const compared = async () => total(parseMetrics(await (await fetch(`${server.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text()), 'catcomfort_shadow_latency_seconds_count', { version: '2.0.0' });
    const routed = await packs('route', 'bc-v1@2.0.0', '--shadow', '25%');
    assert.equal(routed.code, 0, routed.stderr);
    assert.equal(routed.stdout, 'bc-v1: 1.3.0 serving, 2.0.0 shadow 25%\n');
    assert.match((await packs('list')).stdout, /^bc-v1\t1\.3\.0 serving, 2\.0\.0 shadow 25%$/m);
    assert.deepEqual(
      (await request(`${server.url}/v2/models`)).body.models.find((m: any) => m.id === 'bc-v1').versions.map((v: any) => [v.role, v.share]),
      [['serving', 0], ['shadow', 0.25]],
    );
    // A share of 1e-12: one client, one request at a time (spare capacity each time), and no comparison.
    assert.equal((await packs('route', 'bc-v1@2.0.0', '--shadow', '0.0000000001%')).code, 0);
    const before = await compared();
    for (let i = 0; i < 20; i++) assert.equal((await postJson(`${server.url}/v2/predict`, { image: CAT })).status, 200);
    assert.equal(await compared(), before, 'not drawn');
    for (const bad of [['--shadow', '0%'], ['--shadow', '101%'], ['--shadow', '--canary', '5%']]) {
      const refused = await packs('route', 'bc-v1@2.0.0', ...bad);
      assert.equal(refused.code, 2, bad.join(' '));
    }
    assert.equal((await packs('route', 'bc-v1@2.0.0', '--shadow')).stdout, 'bc-v1: 1.3.0 serving, 2.0.0 shadow\n');
    assert.equal((await packs('route', 'bc-v1@2.0.0', '--standby')).code, 0);
  });

  test('corrupt packs are refused with the reason, and the serving version keeps answering', async () => {
    const bad = path.join(models, 'bc-v1@2.0.1');
    cpSync(path.join(models, 'bc-v1@2.0.0'), bad, { recursive: true });
    const manifest = JSON.parse(readFileSync(path.join(bad, 'manifest.json'), 'utf8'));
    writeFileSync(path.join(bad, 'manifest.json'), JSON.stringify({ ...manifest, version: '2.0.1' }));
    writeFileSync(path.join(bad, 'head.json'), '{"weights": []}');
    assert.equal((await packs('unload', 'bc-v1@2.0.0')).code, 0);
    const sha = await packs('load', bad);
    assert.equal(sha.code, 1);
    assert.match(sha.stderr, /^pack_refused: Model file .*head\.json has sha256 [0-9a-f]{64}, expected [0-9a-f]{64}/);
    // A self-contained pack whose detector is not ONNX (its sha256 matching its bytes).
    const broken = path.join(models, 'bc-v1@3.0.0');
    cpSync(path.join(models, 'bc-v1'), broken, { recursive: true });
    const own = JSON.parse(readFileSync(path.join(broken, 'manifest.json'), 'utf8'));
    const detector = own.detector.int8 ?? own.detector;
    const garbage = Buffer.from('this is not an ONNX model');
    writeFileSync(path.join(broken, detector.file), garbage);
    detector.sha256 = createHash('sha256').update(garbage).digest('hex');
    writeFileSync(path.join(broken, 'manifest.json'), JSON.stringify({ ...own, version: '3.0.0' }));
    const onnx = await packs('load', broken);
    assert.equal(onnx.code, 1);
    assert.match(onnx.stderr, /^pack_refused: bc-v1@3.0.0 could not be loaded from .*bc-v1@3\.0\.0: /);
    assert.match((await packs('list')).stdout, /^bc-v1\t1\.3\.0 serving$/m);
    const res = await postJson(`${server.url}/v2/predict`, { image: CAT });
    assert.equal(res.status, 200);
    assert.equal(res.body.model.pack_version, '1.3.0');
  });

  test('admin keys and API keys are separate in both directions', async () => {
    const admin = (await adminPort(server)).toString();
    const adminGet = (key: string) => request(`http://127.0.0.1:${admin}/packs`, { key: null, headers: { Authorization: `Bearer ${key}` } });
    for (const key of [ADMIN_KEY, issuedAdmin]) {
      assert.equal((await adminGet(key)).status, 200);
      assert.equal((await postJson(`${server.url}/v2/predict`, { image: CAT }, {}, key)).status, 401);
    }
    for (const key of [TEST_KEY, issuedApi]) {
      assert.equal((await postJson(`${server.url}/v2/predict`, { image: CAT }, {}, key)).status, 200);
      const refused = await adminGet(key);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error.code, 'unauthorized');
    }
    assert.equal((await request(`http://127.0.0.1:${admin}/packs`, { key: null })).status, 401);
    // Every refused admin request leaves one audit line, with the key's id where known and never a key.
    const auditLines = () => server.output().split('\n').filter((l) => l.includes('"msg":"admin action"')).map((l) => JSON.parse(l));
    const refusedListings = () => auditLines().filter((l) => l.status === 401 && l.action === 'GET /packs').length;
    await waitFor('the refused listings above in the audit log', () => refusedListings() === 3);
    const before = auditLines().length;
    const post = (route: string, key: string, body: unknown) =>
      request(`http://127.0.0.1:${admin}${route}`, { method: 'POST', key: null, headers: { Authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
    assert.equal((await post('/packs/promote', TEST_KEY, { pack: 'bc-v1@1.3.0' })).status, 401);
    assert.equal((await post('/packs/promote', ADMIN_KEY, { pack: 'bc-v1@9.9.9' })).status, 409);
    assert.equal((await post('/packs/route', ADMIN_KEY, { pack: 'bc-v1@9.9.9', role: 'bogus' })).status, 400);
    assert.equal((await post('/packs/load', ADMIN_KEY, { dir: path.join(os.tmpdir(), 'no-such-pack') })).status, 422);
    assert.equal((await post('/packs/nothing', ADMIN_KEY, {})).status, 404);
    const refusals = await waitFor('five more audit lines', () => auditLines().length - before >= 5 && auditLines().slice(before));
    assert.deepEqual(
      refusals.map((l: any) => [l.action, l.status, l.outcome, l.key_id === null]),
      [['promote', 401, 'unauthorized', true], ['promote', 409, 'conflict', false], ['route', 400, 'invalid_request', false], ['load', 422, 'pack_refused', false], ['POST /packs/nothing', 404, 'not_found', false]],
    );
    for (const key of [ADMIN_KEY, TEST_KEY, issuedAdmin, issuedApi]) assert.ok(!server.output().includes(key));
    // The public port has no admin routes.
    assert.equal((await request(`${server.url}/packs`, { key: null, headers: { Authorization: `Bearer ${ADMIN_KEY}` } })).status, 404);
  });
});

describe('a fleet on one PostgreSQL', () => {
  const postgres = usePostgres();

  /** Two instances on a fresh database with `models`, each with an admin listener, syncing every `syncMs`. */
  const twoInstances = async (pg: TestPostgres, models: string, syncMs: number) => {
    const env = {
      ...storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-packs-pg-')), await pg.createDatabase()),
      CATCOMFORT_MODELS_DIR: models,
      CATCOMFORT_ADMIN_PORT: '0',
      CATCOMFORT_ADMIN_KEYS: ADMIN_KEY,
      CATCOMFORT_PACK_SYNC_MS: String(syncMs),
      CATCOMFORT_SCAN_WORKERS: '0',
    };
    return Promise.all([startServer(env), startServer(env)]);
  };

  test('a promotion on one instance: the other converges to it within the sync interval', async (t) => {
    if (!postgres.pg) return t.skip(postgres.skip);
    const models = await modelsWithTrainedVersion();
    const [a, b] = await twoInstances(postgres.pg, models, 500);
    try {
      const url = `http://127.0.0.1:${await adminPort(a)}`;
      const onA = (...args: string[]) => run(['packs', ...args], { CATCOMFORT_ADMIN_URL: url, CATCOMFORT_ADMIN_KEY: ADMIN_KEY });
      assert.equal((await onA('load', path.join(models, 'bc-v1@2.0.0'), '--canary', '10%')).code, 0);
      assert.equal((await onA('promote', 'bc-v1@2.0.0')).code, 0);
      const serving = await waitFor('instance B serving bc-v1 2.0.0', async () => {
        const list = await request(`${b.url}/v2/models`);
        return servingVersion(list.body.models, 'bc-v1') === '2.0.0' && list.body.models;
      }, { timeoutMs: 60_000 });
      assert.deepEqual(serving.find((m: any) => m.id === 'bc-v1').versions.map((v: any) => v.role), ['serving', 'previous']);
      assert.equal((await postJson(`${b.url}/v2/predict`, { image: CAT })).body.model.pack_version, '2.0.0');
      await waitFor('B logging its convergence', () => /"pack":"bc-v1".*"msg":"pack versions converged"/.test(b.output()));
      // A rollback on A: B follows again.
      assert.equal((await onA('rollback', 'bc-v1')).code, 0);
      await waitFor('instance B serving bc-v1 1.3.0 again', async () => servingVersion((await request(`${b.url}/v2/models`)).body.models, 'bc-v1') === '1.3.0', { timeoutMs: 60_000 });
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  test('with the store down an action is refused with 503 before anything changes, and works again once it is back', async (t) => {
    if (!postgres.pg?.outage) return t.skip(postgres.skip || 'an external PostgreSQL cannot be stopped');
    const models = await modelsWithTrainedVersion();
    const [a, b] = await twoInstances(postgres.pg, models, 300);
    const promote = async () => {
      const response = await fetch(`http://127.0.0.1:${await adminPort(a)}/packs/promote`, { method: 'POST', headers: { Authorization: `Bearer ${ADMIN_KEY}` }, body: JSON.stringify({ pack: 'bc-v1@2.0.0' }) });
      return { status: response.status, body: (await response.json()) as any };
    };
    try {
      const load = await fetch(`http://127.0.0.1:${await adminPort(a)}/packs/load`, { method: 'POST', headers: { Authorization: `Bearer ${ADMIN_KEY}` }, body: JSON.stringify({ dir: path.join(models, 'bc-v1@2.0.0') }) });
      assert.equal(load.status, 200);
      postgres.pg.outage.serverDown();
      try {
        const refused = await promote();
        assert.equal(refused.status, 503, JSON.stringify(refused.body));
        assert.match(refused.body.error.message, /cannot be read .*nothing was changed/);
        assert.equal(servingVersion((await request(`${a.url}/v2/models`)).body.models, 'bc-v1'), '1.3.0');
      } finally {
        postgres.pg.outage.serverUp();
      }
      const done = await waitFor('the promotion once the store is back', async () => {
        const r = await promote();
        return r.status === 200 && r;
      }, { timeoutMs: 60_000, intervalMs: 500 });
      assert.match(done.body.versions, /^2\.0\.0 serving/);
      await waitFor('B following', async () => servingVersion((await request(`${b.url}/v2/models`)).body.models, 'bc-v1') === '2.0.0', { timeoutMs: 60_000 });
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  test('actions raced on two instances end in one state on both, and an unload then a load elsewhere converges; the fleet view shows it', async (t) => {
    if (!postgres.pg) return t.skip(postgres.skip);
    const models = await modelsWithTrainedVersion();
    const extra = path.join(path.dirname(models), 'bc-extra');
    cpSync(path.join(models, 'bc-v1'), extra, { recursive: true });
    const manifest = JSON.parse(readFileSync(path.join(extra, 'manifest.json'), 'utf8'));
    writeFileSync(path.join(extra, 'manifest.json'), JSON.stringify({ ...manifest, id: 'bc-extra' }, null, 2));
    const [a, b] = await twoInstances(postgres.pg, models, 300);
    try {
      const admin = async (server: TestServer, route: string, body?: unknown) => {
        const url = `http://127.0.0.1:${await adminPort(server)}${route}`;
        const response = await fetch(url, { method: body === undefined ? 'GET' : 'POST', headers: { Authorization: `Bearer ${ADMIN_KEY}` }, body: body === undefined ? undefined : JSON.stringify(body) });
        return { status: response.status, body: (await response.json()) as any };
      };
      /** Waits until both instances are in the fleet view, each converged to every recorded generation, and returns the view. */
      const converged = (what: string, check: (view: any) => boolean) =>
        waitFor(what, async () => {
          const view = (await admin(a, '/fleet')).body;
          return view.instances.length === 2 && view.instances.every((i: any) => i.converged && !i.stale) && check(view) && view;
        }, { timeoutMs: 90_000 });
      const versionsOf = async (server: TestServer, id: string) => (await request(`${server.url}/v2/models`)).body.models.find((m: any) => m.id === id)?.versions.map((v: any) => `${v.pack_version} ${v.role}`) ?? [];

      assert.equal((await admin(a, '/packs/load', { dir: path.join(models, 'bc-v1@2.0.0') })).status, 200);
      await converged('B with the standby', (view) => view.instances.every((i: any) => i.versions['bc-v1']?.['2.0.0'] === 'standby'));

      // At once: a promotion on A, a canary on B. Each is recorded, or refused with 409 (recorded
      // first elsewhere, or no longer possible once the other's record was applied) and undone.
      const [promoted, routed] = await Promise.all([
        admin(a, '/packs/promote', { pack: 'bc-v1@2.0.0' }),
        admin(b, '/packs/route', { pack: 'bc-v1@2.0.0', role: 'canary', share: 0.5 }),
      ]);
      for (const r of [promoted, routed]) assert.ok(r.status === 200 || (r.status === 409 && r.body.error.code === 'conflict'), JSON.stringify(r));
      assert.ok(promoted.status === 200 || routed.status === 200, 'one of them is recorded');
      const raced = await converged('both instances converged after the race', (view) => view.recorded.find((r: any) => r.pack === 'bc-v1').generation >= 2);
      const generation = raced.recorded.find((r: any) => r.pack === 'bc-v1').generation;
      assert.deepEqual(raced.instances.map((i: any) => i.applied['bc-v1']), [generation, generation]);
      assert.deepEqual(raced.instances[0].versions['bc-v1'], raced.instances[1].versions['bc-v1']);
      assert.deepEqual(await versionsOf(a, 'bc-v1'), await versionsOf(b, 'bc-v1'));

      // A pack id loaded on A, unloaded on A, loaded again on B: every instance follows, generations only grow.
      assert.equal((await admin(a, '/packs/load', { dir: extra })).status, 200);
      await converged('bc-extra on both', (view) => view.instances.every((i: any) => i.versions['bc-extra']));
      const unload = await admin(a, '/packs/unload', { pack: 'bc-extra' });
      assert.equal(unload.status, 200, JSON.stringify(unload.body));
      const gone = await converged('bc-extra gone from both', (view) => view.instances.every((i: any) => !i.versions['bc-extra']));
      assert.deepEqual(gone.recorded.find((r: any) => r.pack === 'bc-extra'), { ...gone.recorded.find((r: any) => r.pack === 'bc-extra'), unloaded: true, generation: 2 });
      assert.equal((await admin(b, '/packs/load', { dir: extra })).status, 200);
      const back = await converged('bc-extra back on both', (view) => view.instances.every((i: any) => i.versions['bc-extra']?.['1.3.0'] === 'serving'));
      assert.equal(back.recorded.find((r: any) => r.pack === 'bc-extra').generation, 3);
      assert.equal((await postJson(`${a.url}/v2/models/bc-extra/predict`, { image: CAT })).status, 200);
      const printed = await run(['packs', 'fleet'], { CATCOMFORT_ADMIN_URL: `http://127.0.0.1:${await adminPort(b)}`, CATCOMFORT_ADMIN_KEY: ADMIN_KEY });
      assert.equal(printed.code, 0, printed.stderr);
      assert.equal(printed.stdout.split('\n').filter((l) => /^instance\t.*\tconverged\t.*bc-extra@3: 1\.3\.0 serving/.test(l)).length, 2, printed.stdout);
      assert.match(printed.stdout, /^recorded\tbc-extra\tgeneration 3\t1\.3\.0 serving\t/m);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
