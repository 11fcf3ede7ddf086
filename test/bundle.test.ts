// The offline bundle (src/tools/bundle.ts): built (with quick compression), unpacked into a
// temporary folder and started there by its one command, with a PATH that holds no program (no
// node, no npm), a fresh HOME and no other environment; it must answer /v2/predict.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { elfSection } from '../src/tools/cuda-fatbin';
import { postJson, request } from './helpers/http';
import { photo, repoRoot } from './helpers/paths';
import { startServer } from './helpers/server';

function onPath(program: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && existsSync(path.join(dir, program)));
}

test('the bundle unpacks and serves /v2/predict without npm, PATH or HOME', async () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'cc-bundle-test-'));
  try {
    const archive = path.join(work, 'catcomfort.tar.xz');
    execFileSync(process.execPath, [path.join(repoRoot, 'dist/src/tools/bundle.js'), '--fast', '--out', archive], { stdio: 'pipe' });
    const unpacked = path.join(work, 'unpacked');
    mkdirSync(unpacked);
    execFileSync('tar', ['-xf', archive, '-C', unpacked]);

    const app = path.join(unpacked, 'catcomfort/app');
    const modules = path.join(app, 'node_modules');
    assert.deepEqual(readdirSync(path.join(modules, '@trufflesuite/uws-js-unofficial/binaries')), [`uws_linux_x64_${process.versions.modules}.node`]);
    for (const absent of ['typescript', 'cmake-js', '@img', '@types', 'autocannon', 'node-addon-api', 'com.github.asus4.onnxruntime', 'prebuild-install', 'react']) {
      assert.ok(!existsSync(path.join(modules, absent)), `${absent} is not in the bundle`);
    }
    assert.ok(!existsSync(path.join(app, 'build/Release/libonnxruntime_providers_cuda.so')), 'no CUDA provider without --cuda');
    assert.ok(!existsSync(path.join(app, 'build/Release/catcomfort_bench.node')), 'no benchmark binding');
    const packageFiles = readdirSync(modules, { recursive: true, encoding: 'utf8' });
    assert.deepEqual(packageFiles.filter((f) => /(^|\/)(test|docs|examples)$|\.(d\.ts|map|md)$/.test(f) && !/(^|\/)licen[cs]e[^/]*$/i.test(f) && !f.startsWith('@sinclair/typebox/build/cjs/')), [], 'no tests, documents, declarations or maps (licences stay)');
    assert.ok(!existsSync(path.join(modules, '@sinclair/typebox/build/esm')), "TypeBox's CommonJS build only");
    if (onPath('strip')) assert.equal(elfSection(readFileSync(path.join(unpacked, 'catcomfort/node/bin/node')), '.symtab'), null, 'Node.js is stripped');
    assert.ok(existsSync(path.join(app, 'models/bc-v1/ssd_mobilenetv2_oidv4.int8.onnx')), 'bc-v1 ships its int8 detector');
    assert.ok(existsSync(path.join(app, 'models/bc-v1/ssd_mobilenetv2_oidv4.int8-calibration.json')), 'with the table it was made from');
    assert.ok(existsSync(path.join(app, 'models/bc-v1/ssd_mobilenetv2_oidv4.onnx')), 'and the float detector, which the int8 self-check compares with');
    assert.ok(existsSync(path.join(app, 'models/bc-v1/reference-cat-chelsea.png')), 'and the self-check photos');
    assert.ok(!existsSync(path.join(app, 'models/bc-v1/mobilenetv2-12-int8.onnx')), "not the zoo's ImageNet file: the served backbones are made from it at install");
    assert.ok(existsSync(path.join(app, 'models/bc-legacy/yolox_nano.onnx')));
    const jemallocHere = existsSync('/usr/lib/x86_64-linux-gnu/libjemalloc.so.2');
    assert.equal(existsSync(path.join(unpacked, 'catcomfort/lib/libjemalloc.so.2')), jemallocHere, "this machine's jemalloc, where installed");

    const emptyBin = path.join(work, 'bin');
    const home = path.join(work, 'home');
    mkdirSync(emptyBin);
    mkdirSync(home);
    const server = await startServer({ PATH: emptyBin, HOME: home, CATCOMFORT_GRPC_PORT: '0' }, { command: path.join(unpacked, 'catcomfort/run'), inheritEnv: false, cwd: home });
    try {
      const res = await postJson(`${server.url}/v2/predict`, { image: readFileSync(photo('000_skimage_chelsea.png')).toString('base64') });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.detection, 'detected');
      const v1 = (await request(`${server.url}/v2/models`)).body.models.find((m: { id: string }) => m.id === 'bc-v1');
      assert.match(v1.detector.precision_reason, /^self-check passed/, 'the self-check runs from the bundle');
      assert.match(server.output(), /"msg":"grpc listening"/, 'the gRPC service finds its proto in the bundle');
      if (jemallocHere) assert.match(server.output(), /"malloc":\{"allocator":"jemalloc"/, 'the launcher preloads the bundled jemalloc without PATH');
    } finally {
      await server.stop();
    }
    assert.equal(server.child.exitCode, 0, server.output());
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('a --bench bundle runs our side of the benchmark suite without npm, PATH or HOME', async () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'cc-bundle-bench-'));
  try {
    execFileSync(process.execPath, [path.join(repoRoot, 'dist/src/tools/bundle.js'), '--bench', '--dir', work], { stdio: 'pipe' });
    const app = path.join(work, 'catcomfort/app');
    assert.ok(existsSync(path.join(app, 'build/Release/catcomfort_bench.node')), 'the benchmark binding');
    for (const name of ['tinybench', 'autocannon']) assert.ok(existsSync(path.join(app, 'node_modules', name, 'package.json')), name);

    // Two of the fixture photos (a cat and a scene), as a shared folder of their own.
    const shared = path.join(work, 'shared');
    const photos = path.join(shared, 'fixtures/photos');
    mkdirSync(photos, { recursive: true });
    const manifest = JSON.parse(readFileSync(photo('manifest.json'), 'utf8')) as { images: Array<{ file: string; group: string }> };
    const images = ['cat', 'nocat'].map((group) => manifest.images.find((i) => i.group === group)!);
    for (const image of images) copyFileSync(photo(image.file), path.join(photos, image.file));
    writeFileSync(path.join(photos, 'manifest.json'), JSON.stringify({ ...manifest, images }));

    const home = path.join(work, 'home');
    mkdirSync(home);
    const env = {
      PATH: path.join(work, 'no-bin'),
      HOME: home,
      CATCOMFORT_SHARED_DIR: shared,
      BENCH_ONLY: 'inprocess',
      BENCH_INPROCESS_CONCURRENCY: '1',
      BENCH_DURATION_S: '1',
      BENCH_WARMUP_S: '0',
    };
    execFileSync(path.join(work, 'catcomfort/bench'), [], { cwd: home, env, stdio: 'pipe', timeout: 240_000 });
    const report = JSON.parse(readFileSync(path.join(app, 'bench/results/latest.json'), 'utf8'));
    assert.equal(report.inprocess.levels[0].failed, 0);
    assert.ok(report.inprocess.levels[0].rps > 0);
    assert.equal(report.inprocess.phone.photos, 2, 'the phone-size copies of the two photos');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
