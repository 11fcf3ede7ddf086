// The three OpenAPI documents and their docs pages as the real service serves them: redocly's
// recommended rules pass, every operation is documented with examples, the request examples work
// as sent by "Try it out", the pages load nothing from other hosts, and GET / leads to the docs.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { request } from './helpers/http';
import { repoRoot } from './helpers/paths';
import { createCredential, scanHeaders, storeEnv, waitForScan } from './helpers/scan';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';

const run = promisify(execFile);

let server: TestServer;
let tmp: string;
const docs: Record<string, any> = {};

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'catcomfort-docs-'));
  server = await startServer({ CATCOMFORT_DATA_DIR: path.join(tmp, 'data') });
  for (const [name, url, key] of [
    ['v2', '/v2/openapi.json', null],
    ['v1', '/openapi.json', TEST_KEY],
    ['scan', '/scan/openapi.json', null],
  ] as const) {
    const res = await request(`${server.url}${url}`, { key });
    assert.equal(res.status, 200, url);
    docs[name] = res.body;
  }
});

after(async () => {
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

function operations(doc: any): Array<[string, any]> {
  return Object.entries<any>(doc.paths).flatMap(([p, item]) =>
    Object.entries<any>(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]): [string, any] => [`${method.toUpperCase()} ${p}`, op]),
  );
}

/** The example "Try it out" fills in: the media type's `example`, else its first named example. */
function firstExample(media: any): unknown {
  if ('example' in media) return media.example;
  const examples = Object.values<any>(media.examples ?? {});
  return examples[0]?.value;
}

describe('OpenAPI documents', () => {
  test('redocly lint with its recommended rules: no errors and no warnings in any document', async () => {
    for (const [name, doc] of Object.entries(docs)) {
      const file = path.join(tmp, `${name}.json`);
      writeFileSync(file, JSON.stringify(doc));
      // Telemetry and the update check off: the linter makes no network request.
      const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
      const result = await run(path.join(repoRoot, 'node_modules/.bin/redocly'), ['lint', '--extends=recommended', '--format=json', file], { cwd: tmp, env }).catch(
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
      const report = JSON.parse(result.stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string }> };
      const problems = report.problems.map((p) => `${p.ruleId}: ${p.message}`).join('\n');
      assert.equal('code' in result ? result.code : 0, 0, `${name}: redocly failed\n${problems}\n${result.stderr}`);
      assert.deepEqual([report.totals.errors, report.totals.warnings], [0, 0], `${name}:\n${problems}`);
    }
  });

  test('every operation has an operationId, a tag, a summary, and examples for its request and every response', () => {
    for (const [name, doc] of Object.entries(docs)) {
      assert.deepEqual(doc.servers, [{ url: '/', description: 'This service (the origin serving this document)' }], name);
      const tags = new Set(doc.tags.map((t: { name: string }) => t.name));
      for (const [label, op] of operations(doc)) {
        const where = `${name} ${label}`;
        assert.match(op.operationId, /^[a-z_0-9]+$/, where);
        assert.ok(op.tags.length > 0 && op.tags.every((t: string) => tags.has(t)), where);
        assert.ok(op.summary, where);
        for (const media of Object.values<any>(op.requestBody?.content ?? {})) assert.notEqual(firstExample(media), undefined, `${where} request`);
        for (const [status, response] of Object.entries<any>(op.responses)) {
          for (const [type, media] of Object.entries<any>(response.content ?? {})) {
            assert.notEqual(firstExample(media), undefined, `${where} ${status} ${type}`);
          }
        }
      }
    }
  });

  test('v2 lists its error codes per operation, each with an example of that code, and no scan-only code', () => {
    const v2 = JSON.stringify(docs.v2);
    assert.ok(!v2.includes('too_many_failed_attempts'), 'v2 names the scan-only code');
    assert.ok(JSON.stringify(docs.scan).includes('too_many_failed_attempts'));
    for (const [label, op] of operations(docs.v2).filter(([, op]) => !op.tags.includes('Open Inference Protocol'))) {
      const codes = Object.entries<any>(op.responses)
        .filter(([status]) => Number(status) >= 400)
        .flatMap(([status, response]) =>
          Object.values<any>(response.content['application/json'].examples).map((e) => {
            assert.ok(response.description.includes(`\`${e.value.error.code}\``), `${label} ${status} does not describe ${e.value.error.code}`);
            return `${status} ${e.value.error.code}`;
          }),
        );
      assert.ok(codes.includes('401 unauthorized') && codes.includes('503 unavailable'), label);
      if (op.operationId.startsWith('predict')) {
        for (const code of ['400 invalid_image', '413 http_error', '415 http_error', '422 invalid_request', '429 overloaded']) assert.ok(codes.includes(code), `${label}: ${code}`);
        assert.equal(codes.includes('404 model_not_found'), op.operationId === 'predict_with_model', label);
      }
    }
  });

  test('the Open Inference Protocol routes are in the v2 document, their errors in its shape, and its infer example answers', async () => {
    const oip = operations(docs.v2).filter(([, op]) => op.tags.includes('Open Inference Protocol'));
    assert.deepEqual(
      oip.map(([label]) => label),
      [
        'GET /v2/health/live',
        'GET /v2/health/ready',
        'GET /v2',
        'GET /v2/models/{model_id}',
        'GET /v2/models/{model_id}/versions/{version}',
        'GET /v2/models/{model_id}/ready',
        'GET /v2/models/{model_id}/versions/{version}/ready',
        'POST /v2/models/{model_id}/infer',
        'POST /v2/models/{model_id}/versions/{version}/infer',
      ],
    );
    for (const [label, op] of oip) {
      for (const [status, response] of Object.entries<any>(op.responses).filter(([s]) => Number(s) >= 400)) {
        for (const example of Object.values<any>(response.content['application/json'].examples)) {
          assert.deepEqual(Object.keys(example.value), ['error', 'code', 'details', 'request_id'], `${label} ${status}`);
          assert.ok(response.description.includes(`\`${example.value.code}\``), `${label} ${status} ${example.value.code}`);
        }
      }
    }
    const infer = docs.v2.paths['/v2/models/{model_id}/infer'].post;
    const res = await request(`${server.url}/v2/models/bc-v1/infer`, { method: 'POST', body: JSON.stringify(firstExample(infer.requestBody.content['application/json'])) });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.outputs.find((o: any) => o.name === 'detection').data, ['detected']);
    const documented = firstExample(infer.responses['200'].content['application/json']) as any;
    assert.deepEqual(res.body.outputs.map((o: any) => [o.name, o.datatype, o.shape]), documented.outputs.map((o: any) => [o.name, o.datatype, o.shape]));
  });

  test('/v2/stats is described by a schema that its real answer has', async () => {
    const schema = docs.v2.components.schemas.StatsResponse;
    assert.deepEqual(schema.required, ['request_id', 'simulatedDevice', 'eventLoop', 'models']);
    const stats = await request(`${server.url}/v2/stats`);
    assert.equal(stats.status, 200);
    assert.equal(stats.body.simulatedDevice, null, 'the networks really run');
    assert.deepEqual(Object.keys(stats.body.eventLoop).sort(), [...schema.properties.eventLoop.required].sort());
    const modelSchema = Object.values<any>(schema.properties.models.patternProperties)[0];
    for (const model of Object.values<any>(stats.body.models)) assert.deepEqual(Object.keys(model).sort(), [...modelSchema.required].sort());
  });

  test('no request example defaults threshold, and the predict request example is a real photo', () => {
    for (const op of [docs.v2.paths['/v2/predict'].post, docs.v2.paths['/v2/models/{model_id}/predict'].post]) {
      const example = firstExample(op.requestBody.content['application/json']) as { image: string; threshold?: number };
      assert.deepEqual(Object.keys(example), ['image']);
      assert.ok(Buffer.from(example.image, 'base64').subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff])), 'a JPEG');
    }
    assert.ok(!JSON.stringify(docs).includes('"threshold":1'));
  });

  test('"Try it out" with the request examples as they are: 200 and a detected cat', async () => {
    const v2 = docs.v2.paths;
    const cases: Array<[string, any]> = [
      ['/v2/predict', v2['/v2/predict'].post],
      [`/v2/models/bc-v1/predict`, v2['/v2/models/{model_id}/predict'].post],
      ['/invocations', docs.v1.paths['/invocations'].post],
      ['/invocations/bc-legacy', docs.v1.paths['/invocations/bc-legacy'].post],
    ];
    for (const [url, op] of cases) {
      const body = JSON.stringify(firstExample(op.requestBody.content['application/json']));
      const res = await request(`${server.url}${url}`, { method: 'POST', body });
      assert.equal(res.status, 200, `${url}: ${res.text}`);
      if (url.startsWith('/v2')) assert.equal(res.body.detection, 'detected', url);
      else assert.equal(res.body.cat_detected, true, url);
    }
  });

  test('"Try it out" on POST /scan with its request example: 202, then a completed scan of a cat', async () => {
    const credential = createCredential(storeEnv(path.join(tmp, 'data'), null), 'docs-test');
    const body = JSON.stringify(firstExample(docs.scan.paths['/scan'].post.requestBody.content['application/json']));
    const res = await request(`${server.url}/scan`, { method: 'POST', body, key: null, headers: scanHeaders(credential) });
    assert.equal(res.status, 202, res.text);
    const scan = await waitForScan(server.url, res.body.scanId, credential);
    assert.equal(scan.status, 'COMPLETED');
    assert.equal(scan.isCat, true);
  });
});

describe('docs pages', () => {
  test('GET / redirects to /v2/docs', async () => {
    const res = await fetch(`${server.url}/`, { redirect: 'manual' });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('location'), '/v2/docs');
  });

  // What a page loads by itself: the src/href of its <script>, <link> and <img> tags, URLs in its
  // inline scripts, element `src` values set in its scripts, and CSS url()/@import. Each must stay on
  // this service. Plain links (<a href>) in the bundles are not loads and are not checked.
  test('the Swagger UI and ReDoc pages load nothing from another host', async () => {
    const pages = ['/v2/docs', '/v2/redoc', '/scan/docs', '/scan/redoc', `/docs?api_key=${TEST_KEY}`];
    const assets = new Set<string>();
    for (const page of pages) {
      const html = await request(`${server.url}${page}`, { key: null });
      assert.equal(html.status, 200, page);
      for (const [, tag, attr, value] of html.text.matchAll(/<(script|link|img)\b[^>]*?\b(src|href)="([^"]*)"/g)) {
        assert.match(value!, /^\/[^/]/, `${page}: <${tag} ${attr}="${value}">`);
        assets.add(value!);
      }
      for (const [, inline] of html.text.matchAll(/<script>([\s\S]*?)<\/script>/g)) assert.doesNotMatch(inline!, /https?:\/\//, `${page} inline script`);
      if (page.includes('docs')) assert.match(html.text, /validatorUrl: null/, `${page}: Swagger UI's online validator badge`);
    }
    assert.ok(assets.has('/v2/redoc/redoc.standalone.js') && assets.has('/v2/docs/swagger-ui-bundle.js') && assets.has('/docs/swagger-ui.css'));
    for (const asset of assets) {
      const res = await request(`${server.url}${asset}`, { key: null });
      assert.equal(res.status, 200, asset);
      assert.doesNotMatch(res.text, /\bsrc\s*[:=]\s*["'](?:https?:)?\/\//, `${asset}: an element src on another host`);
      assert.doesNotMatch(res.text, /url\(\s*["']?(?:https?:)?\/\/|@import\s+["'](?:https?:)?\/\//, `${asset}: CSS from another host`);
      assert.ok(!res.text.includes('cdn.redoc.ly'), `${asset}: ReDoc's CDN logo`);
    }
  });
});
