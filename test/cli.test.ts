// The `catcomfort` command run as a child process on the shared photos: predict gives the answer
// the service gives for the same photo, in input order, with a JSON error line for a bad file;
// validate-pack accepts the shipped pack and refuses a copy whose manifest has a wrong sha256.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { renderBar } from '../src/cli/progress';
import { postJson } from './helpers/http';
import { photo, repoRoot } from './helpers/paths';
import { startServer, type TestServer } from './helpers/server';

const CAT = '000_skimage_chelsea.png';
const DOG = '070_darknet_dog.jpg';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function catcomfort(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return catcomfortWithStdin(args, null, env);
}

function catcomfortWithStdin(args: string[], stdin: string | null, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(repoRoot, 'bin/catcomfort'), args, { env: { ...process.env, ...env }, stdio: [stdin === null ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (stdin !== null) child.stdin!.end(stdin);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function jsonLines(text: string): any[] {
  return text.trim().split('\n').map((line) => JSON.parse(line));
}

let work: string;
let server: TestServer;

before(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'cc-cli-test-'));
  server = await startServer();
});

after(async () => {
  await server.stop();
  rmSync(work, { recursive: true, force: true });
});

test('predict: one line per file in order, equal to /v2/predict, with a JSON error line and exit 1 for a bad file', async () => {
  const bad = path.join(work, 'not-an-image.jpg');
  writeFileSync(bad, 'this is text, not a JPEG\n');
  const missing = path.join(work, 'missing.png');
  const run = await catcomfort(['predict', photo(CAT), bad, photo(DOG), missing]);
  assert.equal(run.code, 1, run.stderr);
  const lines = jsonLines(run.stdout);
  assert.deepEqual(lines.map((l) => l.file), [photo(CAT), bad, photo(DOG), missing]);
  const [cat, badLine, dog, missingLine] = lines;
  assert.equal(cat.detection, 'detected');
  assert.equal(cat.prediction.label, cat.prediction.score > cat.prediction.threshold ? 'discomfort' : 'comfort');
  assert.equal(dog.detection, 'not_detected');
  assert.equal(dog.prediction, null);
  assert.deepEqual(badLine.error, { code: 'invalid_image', message: 'Image could not be decoded.' });
  assert.equal(missingLine.error.code, 'unreadable_file');
  assert.match(missingLine.error.message, /ENOENT/);

  for (const [file, line] of [[CAT, cat], [DOG, dog]]) {
    const res = await postJson(`${server.url}/v2/predict`, { image: readFileSync(photo(file)).toString('base64') });
    assert.equal(res.status, 200, res.text);
    const { request_id: _id, ...served } = res.body;
    const { file: _file, ...local } = line;
    assert.deepEqual(local, served, `${file}: the CLI and the service agree`);
  }
});

test('predict: a command line over 32 KiB (ONNX Runtime crashes on such a one) and names on stdin', async () => {
  const dir = path.join(work, 'd'.repeat(200));
  mkdirSync(dir);
  const text = path.join(dir, 'notes.txt');
  writeFileSync(text, 'not an image\n');
  const files = [...Array.from({ length: 160 }, () => text), photo(CAT)];
  assert.ok(files.join(' ').length > 36_000);
  const long = await catcomfort(['predict', '--threshold', '0.25', ...files]);
  assert.equal(long.code, 1, long.stderr);
  const lines = jsonLines(long.stdout);
  assert.deepEqual(lines.map((l) => l.file), files);
  assert.ok(lines.slice(0, -1).every((l) => l.error.code === 'invalid_image'));
  assert.deepEqual([lines.at(-1).detection, lines.at(-1).prediction.threshold], ['detected', 0.25]);

  for (const input of [`${photo(CAT)}\n${photo(DOG)}\n`, `${photo(CAT)}\0${photo(DOG)}`]) {
    const run = await catcomfortWithStdin(['predict', '-'], input);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(jsonLines(run.stdout).map((l) => [l.file, l.detection]), [[photo(CAT), 'detected'], [photo(DOG), 'not_detected']]);
  }
  assert.equal((await catcomfortWithStdin(['predict', '-'], '')).code, 2);
  assert.equal((await catcomfort(['predict', '-', photo(CAT)])).code, 2);
});

test('predict: --model and --threshold, exit 0 when every file is analysed', async () => {
  const run = await catcomfort(['predict', '--model', 'bc-legacy', '--threshold', '0', photo(CAT)]);
  assert.equal(run.code, 0, run.stderr);
  const [line] = jsonLines(run.stdout);
  assert.equal(line.model.id, 'bc-legacy');
  assert.equal(line.detection, 'detected');
  assert.deepEqual({ label: line.prediction.label, threshold: line.prediction.threshold }, { label: 'discomfort', threshold: 0 });
  assert.match(run.stderr, /untrained reference network/);
});

test('predict: bad usage exits 2 with a message and no output', async () => {
  for (const [args, message] of [
    [['predict'], /at least one FILE/],
    [['predict', '--threshold', '1.5', photo(CAT)], /--threshold must be a number from 0 to 1/],
    [['predict', '--threshold', '', photo(CAT)], /--threshold must be a number from 0 to 1/],
    [['predict', '--model', 'bc-v9', photo(CAT)], /no model pack "bc-v9".*bc-legacy, bc-v1/],
    [['predict', '--bogus', photo(CAT)], /Unknown option '--bogus'/],
  ] as const) {
    const run = await catcomfort([...args]);
    assert.equal(run.code, 2, args.join(' '));
    assert.match(run.stderr, message);
    assert.equal(run.stdout, '');
  }
  const config = await catcomfort(['predict', photo(CAT)], { CATCOMFORT_MAX_PIXELS: 'many' });
  assert.equal(config.code, 2);
  assert.match(config.stderr, /CATCOMFORT_MAX_PIXELS must be an integer/);
});

test('--help on every command exits 0 with its usage on stdout', async () => {
  for (const args of [['--help'], ['predict', '--help'], ['validate-pack', '-h'], ['keys', '--help'], ['credentials', 'help'], ['keys', 'revoke', '--help']]) {
    const run = await catcomfort(args);
    assert.equal(run.code, 0, args.join(' '));
    assert.match(run.stdout, /^Usage: catcomfort/, args.join(' '));
    assert.match(run.stdout, /Exit codes/, args.join(' '));
  }
  const trainHelp = await catcomfort(['train-head', '--help']);
  assert.equal(trainHelp.code, 0);
  assert.match(trainHelp.stdout, /^Usage: catcomfort train-head/);
});

test('validate-pack: the shipped pack passes every check', async () => {
  const run = await catcomfort(['validate-pack', path.join(repoRoot, 'models/bc-v1')]);
  assert.equal(run.code, 0, run.stderr);
  const checks = run.stdout.trim().split('\n').map((l) => l.split(/\s+/).slice(0, 2).join(' '));
  assert.deepEqual(checks, [
    'ok manifest', 'ok detector', 'ok detector-int8', 'ok calibration', 'ok backbone', 'ok backbone-float', 'ok backbone-int8', 'ok head',
    ...Array(4).fill('ok reference-photo'), 'ok inference',
  ]);
  assert.match(run.stdout, /inference +models\/warmup-cat.png: detection detected.*; int8: self-check passed: 4 photos/);
});

test('validate-pack: a copy with a wrong sha256 in its manifest fails, naming the file, and skips the inference', async () => {
  const source = path.join(repoRoot, 'models/bc-v1');
  const copy = path.join(work, 'packs/bc-v1');
  mkdirSync(copy, { recursive: true });
  const manifest = JSON.parse(readFileSync(path.join(source, 'manifest.json'), 'utf8'));
  const c = manifest.classifier;
  const files = [manifest.detector, manifest.detector.int8, manifest.detector.int8.calibration, c.backbone, c.backbone.float, c.backbone.int8, c.head, ...manifest.selfCheck.photos];
  for (const { file } of files) copyFileSync(path.join(source, file), path.join(copy, file));
  manifest.classifier.head.sha256 = '0'.repeat(64);
  writeFileSync(path.join(copy, 'manifest.json'), JSON.stringify(manifest));
  const run = await catcomfort(['validate-pack', copy]);
  assert.equal(run.code, 1);
  assert.match(run.stdout, /^ok +detector/m);
  assert.match(run.stdout, /^ok +backbone +mobilenetv2-12-int8\.onnx/m);
  assert.match(run.stderr, new RegExp(`^FAIL head .*head.json has sha256 [0-9a-f]{64}, expected ${'0'.repeat(64)}`, 'm'));
  assert.match(run.stderr, /^skip inference/m);

  const missing = await catcomfort(['validate-pack', path.join(work, 'packs/none')]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^FAIL manifest .*Cannot read model manifest/m);
  assert.equal((await catcomfort(['validate-pack'])).code, 2);
});

test('validate-pack takes the folders packs load takes: ID@VERSION passes, another name fails with the names to use', async () => {
  const source = path.join(repoRoot, 'models/bc-v1');
  const manifest = JSON.parse(readFileSync(path.join(source, 'manifest.json'), 'utf8'));
  const staged = path.join(work, `staged/bc-v1@${manifest.version}`);
  cpSync(source, staged, { recursive: true, dereference: true });
  const run = await catcomfort(['validate-pack', staged]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, new RegExp(`^ok +manifest .*bc-v1 ${manifest.version.replace(/\./g, '\\.')}`, 'm'));

  const renamed = path.join(work, 'staged/my-pack');
  mkdirSync(renamed, { recursive: true });
  copyFileSync(path.join(source, 'manifest.json'), path.join(renamed, 'manifest.json'));
  const refused = await catcomfort(['validate-pack', renamed]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`^FAIL manifest .*name it "bc-v1" or "bc-v1@${manifest.version.replace(/\./g, '\\.')}"`, 'm'));
});

test('the progress bar fits the terminal and counts errors', () => {
  assert.equal(renderBar(0, 40, 0, 80), `[${'.'.repeat(40)}]  0/40 files`);
  assert.equal(renderBar(20, 40, 1, 80), `[${'#'.repeat(20)}${'.'.repeat(20)}] 20/40 files, 1 error`);
  assert.equal(renderBar(3, 4, 2, 30), `[${'#'.repeat(5)}${'.'.repeat(2)}] 3/4 files, 2 errors`);
  assert.ok(renderBar(3, 4, 2, 30).length < 30);
  assert.equal(renderBar(3, 4, 2, 12), '3/4 files,');
});
