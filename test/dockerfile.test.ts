// The container files without a Docker engine: the Dockerfile's stages, what each COPY takes
// (from the build context, which .dockerignore filters, or from what the build stage makes), the
// runtime user, the health check on /readyz, and compose.yaml's settings against those the service reads.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { KNOWN_VARIABLES } from '../src/config';
import { packFiles } from '../src/packs/pack-files';
import { copies, execForm, makeIgnore, parseDockerfile, type Stage } from './helpers/dockerfile';
import { repoRoot } from './helpers/paths';
import { startServer } from './helpers/server';

const dockerfile = parseDockerfile(readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'));
const ignored = makeIgnore(readFileSync(path.join(repoRoot, '.dockerignore'), 'utf8'));
const compose = readFileSync(path.join(repoRoot, 'compose.yaml'), 'utf8');

function stage(name: string): Stage {
  const found = dockerfile.stages.find((s) => s.name === name);
  assert.ok(found, `stage ${name}`);
  return found;
}

function instruction(s: Stage, keyword: string): string {
  const found = s.instructions.filter((i) => i.keyword === keyword);
  assert.equal(found.length, 1, `one ${keyword} in stage ${s.name}`);
  return found[0]!.args;
}

/** The ENV settings of a stage (key=value form). */
function envOf(s: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of s.instructions.filter((x) => x.keyword === 'ENV')) {
    for (const pair of i.args.split(' ')) {
      const [key, ...value] = pair.split('=');
      env[key!] = value.join('=');
    }
  }
  return env;
}

/** The runtime's folder as the build stage lays it out: `bundle.js --dir` into a temporary folder. */
let built: string;
const runtimeRoot = '/opt/catcomfort';

before(() => {
  const buildRun = stage('build').instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args).join('\n');
  const dir = /node dist\/src\/tools\/bundle\.js --dir (\S+)/.exec(buildRun)?.[1];
  assert.equal(dir, path.dirname(runtimeRoot), 'the build stage lays the bundle out in the folder the runtime copies');
  built = mkdtempSync(path.join(os.tmpdir(), 'cc-docker-test-'));
  execFileSync(process.execPath, [path.join(repoRoot, 'dist/src/tools/bundle.js'), '--dir', built], { stdio: 'pipe' });
});

after(() => rmSync(built, { recursive: true, force: true }));

/** Where an absolute path of the runtime image lies in `built`. */
function inBuilt(imagePath: string): string {
  assert.ok(imagePath === runtimeRoot || imagePath.startsWith(`${runtimeRoot}/`), `${imagePath} is inside ${runtimeRoot}`);
  return path.join(built, 'catcomfort', path.relative(runtimeRoot, imagePath));
}

test('stages: an empty model mirror, a Node 20 build stage and a slim runtime on the same Debian release', () => {
  assert.deepEqual(dockerfile.stages.map((s) => s.name), ['model-mirror', 'build', 'runtime']);
  assert.equal(stage('model-mirror').base, 'scratch');
  assert.deepEqual(stage('model-mirror').instructions, []);
  assert.equal(stage('build').base, 'node:20-bookworm');
  assert.equal(stage('runtime').base, 'debian:bookworm-slim');
  const runs = stage('build').instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
  assert.match(runs[0]!, /apt-get install .*cmake/);
  // The mirror, when given, is used for every pack file that names a mirror path (bc-legacy's
  // detector, bc-v1's ImageNet backbone).
  const install = runs.find((r) => r.includes('npm ci'))!;
  assert.match(install, /^--mount=type=bind,from=model-mirror,target=\/mirror /);
  for (const pack of ['bc-v1', 'bc-legacy']) {
    const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'models', pack, 'manifest.json'), 'utf8'));
    for (const file of packFiles(manifest)) {
      if (file.mirrorPath) assert.ok(install.includes(`[ -f /mirror/${file.mirrorPath} ]; then export CATCOMFORT_MODEL_MIRROR=/mirror;`), file.mirrorPath);
    }
  }
  assert.equal(JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).engines.node, '>=20 <21');
});

test('the build stage copies sources that are in the build context, and every tracked file under them', () => {
  const sources = copies(stage('build')).flatMap((c) => {
    assert.equal(c.from, null);
    return c.sources.map((s) => s.replace(/\/$/, ''));
  });
  for (const needed of ['package.json', 'package-lock.json', 'CMakeLists.txt', 'tsconfig.json', 'native', 'src', 'models']) {
    assert.ok(sources.includes(needed), `the build stage copies ${needed}`);
  }
  const tracked = execFileSync('git', ['ls-files'], { cwd: repoRoot, encoding: 'utf8' }).trim().split('\n');
  for (const source of sources) {
    assert.ok(existsSync(path.join(repoRoot, source)), `${source} exists`);
    assert.ok(!ignored(source), `${source} is in the build context`);
    const under = tracked.filter((f) => f === source || f.startsWith(`${source}/`));
    assert.ok(under.length > 0, `${source} is tracked`);
    for (const file of under) assert.ok(!ignored(file), `${file} (tracked) reaches the build`);
  }
  // Committed model files go in; files the install makes are made again in the build stage.
  assert.ok(!ignored('models/bc-legacy/classifier.onnx'));
  assert.ok(!ignored('models/bc-v1/head.json'));
  assert.ok(ignored('models/bc-v1/mobilenetv2-12-int8.onnx'));
  assert.ok(ignored('models/bc-v1/ssd_mobilenetv2_oidv4.onnx'));
  for (const made of ['node_modules', 'build/Release/catcomfort.node', 'dist/src/main.js', 'data/catcomfort.sqlite3']) assert.ok(ignored(made), made);
});

test('the runtime copies only the bundle folder, which holds what its commands run', () => {
  const runtime = stage('runtime');
  const runtimeCopies = copies(runtime);
  assert.deepEqual(runtimeCopies, [{ from: 'build', sources: [runtimeRoot], destination: runtimeRoot }]);
  const cmd = execForm(instruction(runtime, 'CMD'));
  assert.deepEqual(cmd, [`${runtimeRoot}/run`]);
  const health = execForm(instruction(runtime, 'HEALTHCHECK'));
  assert.deepEqual(health, [`${runtimeRoot}/node/bin/node`, `${runtimeRoot}/app/dist/src/tools/healthcheck.js`]);
  for (const file of [cmd[0]!, health[0]!, `${runtimeRoot}/catcomfort`]) accessSync(inBuilt(file), constants.X_OK);
  // The command line runs from the bundle with nothing on PATH, as in the image.
  const help = execFileSync(inBuilt(`${runtimeRoot}/catcomfort`), ['--help'], { env: { PATH: '/nonexistent' }, encoding: 'utf8' });
  assert.match(help, /^Usage: catcomfort <command>/);
  assert.ok(statSync(inBuilt(health[1]!)).isFile());
  for (const needed of ['app/build/Release/catcomfort.node', 'app/models/bc-v1/manifest.json', 'app/models/bc-v1/ssd_mobilenetv2_oidv4.int8.onnx', 'app/models/warmup-cat.png', 'app/dist/src/main.js', 'app/dist/src/cli/main.js']) {
    assert.ok(existsSync(inBuilt(`${runtimeRoot}/${needed}`)), needed);
  }
  assert.ok(!readdirSync(path.join(built, 'catcomfort/app')).includes('src'), 'no TypeScript sources in the image');
  // PATH names the bundle's commands (`catcomfort ...` in the container).
  assert.match(envOf(runtime).PATH!, new RegExp(`^${runtimeRoot}:`));
});

test('the runtime runs as an unprivileged user it creates, with a writable data folder', () => {
  const runtime = stage('runtime');
  const user = instruction(runtime, 'USER');
  assert.doesNotMatch(user, /^(root|0)(:|$)/);
  const run = instruction(runtime, 'RUN');
  assert.match(run, new RegExp(`useradd .*--system .* ${user}( |$)`));
  const env = envOf(runtime);
  assert.match(run, new RegExp(`install -d -o ${user} -g ${user} ${env.CATCOMFORT_DATA_DIR}( |$)`));
  assert.equal(instruction(runtime, 'VOLUME'), env.CATCOMFORT_DATA_DIR);
  assert.equal(instruction(runtime, 'EXPOSE'), env.CATCOMFORT_PORT);
  assert.equal(env.CATCOMFORT_HOST, '0.0.0.0');
});

test('every CATCOMFORT_ setting in the Dockerfile and compose.yaml is one the service reads', () => {
  const read = new Set<string>(KNOWN_VARIABLES);
  const named = [...Object.keys(envOf(stage('runtime'))), ...(compose.match(/CATCOMFORT_[A-Z0-9_]+/g) ?? [])].filter((n) => n.startsWith('CATCOMFORT_'));
  assert.ok(named.includes('CATCOMFORT_DATABASE_URL'));
  for (const name of named) assert.ok(read.has(name), `${name} is a known setting (src/config/settings.ts)`);
});

test('Dockerfile.gpu: the same build with the CUDA provider bundled, on a CUDA 13 cuDNN runtime that runs what bookworm built', () => {
  const gpu = parseDockerfile(readFileSync(path.join(repoRoot, 'Dockerfile.gpu'), 'utf8'));
  const gpuStage = (name: string): Stage => gpu.stages.find((s) => s.name === name)!;
  assert.deepEqual(gpu.stages.map((s) => s.name), ['model-mirror', 'build', 'runtime']);
  assert.equal(gpuStage('build').base, stage('build').base);
  assert.deepEqual(copies(gpuStage('build')), copies(stage('build')));
  const install = (s: Stage) => s.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args).find((r) => r.includes('npm ci'))!;
  // The CPU image's install and bundle step, with the CUDA provider (and optionally one architecture's GPU code).
  assert.equal(install(gpuStage('build')), `${install(stage('build'))} --cuda \${CUDA_ARCH:+--cuda-arch $CUDA_ARCH}`);
  // NVIDIA's image with the CUDA 13 runtime, cuBLAS and cuDNN; Ubuntu 24.04 has glibc 2.39 >= bookworm's 2.36.
  assert.match(gpuStage('runtime').base, /^nvidia\/cuda:13\.\d+\.\d+-cudnn-runtime-ubuntu24\.04$/);
  for (const keyword of ['USER', 'RUN', 'WORKDIR', 'VOLUME', 'EXPOSE', 'CMD']) assert.equal(instruction(gpuStage('runtime'), keyword), instruction(stage('runtime'), keyword), keyword);
  assert.deepEqual(copies(gpuStage('runtime')), copies(stage('runtime')));
  assert.deepEqual(execForm(instruction(gpuStage('runtime'), 'HEALTHCHECK')), execForm(instruction(stage('runtime'), 'HEALTHCHECK')));
  assert.deepEqual(envOf(gpuStage('runtime')), { ...envOf(stage('runtime')), CATCOMFORT_EXECUTION_PROVIDERS: 'cuda,cpu' });
  for (const name of Object.keys(envOf(gpuStage('runtime'))).filter((n) => n.startsWith('CATCOMFORT_'))) assert.ok(KNOWN_VARIABLES.includes(name), name);
});

test('compose.yaml runs the image built here with PostgreSQL as the scan store', () => {
  assert.match(compose, /^ {2}catcomfort:\n {4}build:\n {6}context: \.$/m);
  assert.match(compose, /^ {2}postgres:\n {4}image: postgres:\d+/m);
  const url = /CATCOMFORT_DATABASE_URL: (.+)$/m.exec(compose)?.[1];
  assert.match(url!, /^postgres:\/\/catcomfort:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432\/catcomfort$/);
  assert.match(compose, /POSTGRES_USER: catcomfort\n/);
  assert.match(compose, /POSTGRES_DB: catcomfort\n/);
  assert.match(compose, /condition: service_healthy/);
  const port = envOf(stage('runtime')).CATCOMFORT_PORT;
  assert.match(compose, new RegExp(`- "${port}:${port}"`));
});

function runHealthCheck(port: number): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist/src/tools/healthcheck.js')], {
      env: { ...process.env, CATCOMFORT_HOST: '0.0.0.0', CATCOMFORT_PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** Runs the health check script against a stub server answering `status` on 127.0.0.1. */
async function healthCheck(status: number | null): Promise<{ code: number | null; paths: string[]; stderr: string }> {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(status ?? 500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  if (status === null) await new Promise((resolve) => server.close(resolve)); // nothing listens
  try {
    return { ...(await runHealthCheck(port)), paths };
  } finally {
    if (status !== null) await new Promise((resolve) => server.close(resolve));
  }
}

test('the health check asks GET /readyz and is healthy only on 200', async () => {
  const ready = await healthCheck(200);
  assert.deepEqual([ready.code, ready.paths], [0, ['/readyz']]);
  const warming = await healthCheck(503);
  assert.deepEqual([warming.code, warming.paths], [1, ['/readyz']]);
  assert.match(warming.stderr, /answered 503/);
  const down = await healthCheck(null);
  assert.equal(down.code, 1);
  assert.match(down.stderr, /ECONNREFUSED/);
});

test('the health check passes against the real service once it is ready', async () => {
  const server = await startServer(); // returns once GET /readyz answers 200
  try {
    const result = await runHealthCheck(server.port);
    assert.equal(result.code, 0, result.stderr);
  } finally {
    await server.stop();
  }
  const stopped = await runHealthCheck(server.port);
  assert.equal(stopped.code, 1);
});
