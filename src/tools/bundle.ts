// `npm run bundle [-- --cuda [--cuda-arch sm_90 ...]] [-- --bench] [-- --out FILE] [-- --fast] [-- --split MIB] [-- --dir DIR]`:
// one self-contained archive that runs the service on a Linux x64 machine without npm or internet
// (docs/operations.md "Offline bundle"):
//   catcomfort/run                 the one command: starts the service with the Node binary below,
//                                  through app/bin/catcomfort-service (its Node.js settings)
//   catcomfort/catcomfort          the command line (src/cli/main.ts) with the same Node binary
//   catcomfort/node/bin/node       this Node.js (process.execPath), stripped
//   catcomfort/lib/                this machine's jemalloc (Debian's libjemalloc2) and its copyright, when
//                                  installed: the launcher preloads it (docs/operations.md "Memory")
//   catcomfort/app/bin/            catcomfort-service, the service's launcher
//   catcomfort/app/dist/src/       the compiled service (no tests, benchmarks or source maps)
//   catcomfort/app/proto/          the gRPC service's definition, read at start when CATCOMFORT_GRPC_PORT is set
//   catcomfort/app/build/Release/  catcomfort.node, ONNX Runtime, libvips (+ the CUDA provider with --cuda;
//                                  --cuda-arch keeps its GPU code for those architectures only: cuda-fatbin.ts)
//   catcomfort/app/models/         every pack's manifest and documents; enabled packs with their model files
//                                  (both precisions: int8 serves only after its self-check against fp32;
//                                  not the zoo's ImageNet file, which the install step makes them from)
//   catcomfort/app/node_modules/   production modules for this platform only (src/tools/bundle-modules.ts)
// --bench adds our side of the benchmark suite for machines without npm (a GPU server):
//   catcomfort/bench               runs app/dist/bench/run.js (BENCH_* settings as with npm run bench)
//   catcomfort/app/dist/bench/     the compiled suite, with catcomfort_bench.node, tinybench, autocannon and ws
// Built from what `npm ci` installed and built here. Compressed with xz -9 and its x86 filter
// (--fast: xz -0, for tests; --split 60: in parts of at most 60 MiB with a sha256 of the whole,
// src/tools/split-file.ts): the smallest of the common formats (docs/operations.md "Offline bundle"
// has the measured sizes), and GNU tar unpacks it anywhere with xz-utils. --dir DIR writes the catcomfort/
// folder into DIR instead of an archive (the container image's build stage, Dockerfile).
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Manifest } from '../packs/manifest';
import { readManifest, readModelFile } from '../packs/pack';
import { packFileDir, packFiles, type PackFile } from '../packs/pack-files';
import { copyProductionModules, LEFT_OUT } from './bundle-modules';
import { fatbinArchitectures, parseArchitecture, pruneFatbin } from './cuda-fatbin';
import { splitFile } from './split-file';

const repoRoot = path.resolve(__dirname, '../../..');
const CUDA_LIBRARIES = /^libonnxruntime_providers_(cuda|tensorrt)\.so$/;
const CUDA_LIBRARY = 'libonnxruntime_providers_cuda.so';
const release = path.join(repoRoot, 'build/Release');

/** A launcher at the bundle's top running `command` (under app/) with the Node.js shipped beside it. */
function launcher(what: string, command: string): string {
  return `#!/bin/sh
# ${what} with the Node.js shipped beside this file. Settings are CATCOMFORT_*
# environment variables (docs/configuration.md "Configuration"); scans are kept in app/data unless
# CATCOMFORT_DATA_DIR names another folder. Uses no program from PATH.
case "$0" in */*) here=\${0%/*} ;; *) here=. ;; esac
here=$(cd "$here" && pwd -P) || exit 1
${command}
`;
}

/** A launcher running a script of app/ with the bundle's Node.js. */
const nodeLauncher = (what: string, script: string, args: string) => launcher(what, `exec "$here/node/bin/node" "$here/app/${script}"${args}`);

const LAUNCHERS: Record<string, string> = {
  // The service through bin/catcomfort-service, which holds its Node.js settings and finds node/bin/node.
  run: launcher('Starts the Cat Comfort service', 'exec "$here/app/bin/catcomfort-service"'),
  catcomfort: nodeLauncher('The catcomfort command line (docs/cli.md "Command line")', 'dist/src/cli/main.js', ' "$@"'),
};
const BENCH_LAUNCHER = nodeLauncher('Runs the benchmark suite (bench/README.md; the fixture photos from CATCOMFORT_SHARED_DIR)', 'dist/bench/run.js', '');
/** What the benchmark suite loads beyond the service's own dependencies. */
const BENCH_PACKAGES = ['tinybench', 'autocannon', 'ws'];
const BENCH_BINDING = 'catcomfort_bench.node';

function fail(message: string): never {
  process.stderr.write(`bundle: ${message}\n`);
  process.exit(1);
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

function copyInto(source: string, target: string, filter?: (file: string) => boolean): void {
  mkdirSync(path.dirname(target), { recursive: true });
  cpSync(source, target, { recursive: true, dereference: true, ...(filter ? { filter } : {}) });
}

/**
 * Native libraries beside the addon: all but the GPU provider libraries unless `cuda`, and the
 * benchmark binding only with `bench`; `cudaLibrary` (the CUDA provider cut to chosen architectures)
 * is written instead of the installed one.
 */
function copyNative(app: string, cuda: boolean, cudaLibrary: Buffer | null, bench: boolean): void {
  const files = readdirSync(release).filter((f) => (f.endsWith('.node') && (bench || f !== BENCH_BINDING)) || /\.so(\.\d+)*$/.test(f));
  const gpu = files.filter((f) => CUDA_LIBRARIES.test(f));
  mkdirSync(path.join(app, 'build/Release'), { recursive: true });
  for (const file of files) {
    if (!cuda && gpu.includes(file)) continue;
    const target = path.join(app, 'build/Release', file);
    if (file === CUDA_LIBRARY && cudaLibrary) writeFileSync(target, cudaLibrary, { mode: 0o755 });
    else copyInto(path.join(release, file), target);
  }
}

/**
 * This Node.js, without its symbol table and debug information (86 of 99 MB; native addons link
 * against the dynamic symbols, which stay) when binutils' strip is on PATH, else as it is.
 */
function copyNode(top: string): void {
  const target = path.join(top, 'node/bin/node');
  copyInto(process.execPath, target);
  try {
    execFileSync('strip', ['--strip-all', target], { stdio: 'pipe' });
  } catch (error) {
    process.stdout.write(`bundle: Node.js copied with its symbols (strip: ${(error as Error).message.split('\n')[0]})\n`);
  }
}

/** Where Debian's libjemalloc2 puts the library and its copyright (BSD-2-Clause). */
const JEMALLOC = { library: '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', copyright: '/usr/share/doc/libjemalloc2/copyright' };

/** This machine's jemalloc into lib/, which the launcher preloads; without it the host's, or glibc's malloc. */
function copyJemalloc(top: string): void {
  if (!existsSync(JEMALLOC.library) || !existsSync(JEMALLOC.copyright)) {
    process.stdout.write(`bundle: no ${JEMALLOC.library} here (Debian: libjemalloc2): the bundle runs on the host's jemalloc where installed, else glibc's malloc\n`);
    return;
  }
  copyInto(JEMALLOC.library, path.join(top, 'lib/libjemalloc.so.2'));
  copyInto(JEMALLOC.copyright, path.join(top, 'lib/libjemalloc.copyright'));
}

/** The CUDA provider with GPU code for `archs` only; fails naming the architectures it has. */
function cudaLibraryFor(archs: number[]): Buffer {
  const file = readFileSync(path.join(release, CUDA_LIBRARY));
  const present = fatbinArchitectures(file);
  const names = (list: number[]) => list.map((a) => `sm_${a}`).join(', ');
  const missing = archs.filter((a) => !present.includes(a));
  if (missing.length > 0) fail(`--cuda-arch: ${CUDA_LIBRARY} has no code for ${names(missing)}; it has ${names(present)}`);
  const report = pruneFatbin(file, new Set(archs));
  process.stdout.write(
    `bundle: ${CUDA_LIBRARY}: GPU code for ${names(archs)} only (of ${names(present)}): ${report.dropped} entries zeroed, ` +
      `${mib(report.freedBytes)} freed; ${report.untouched} of ${report.containers} containers have none of these and stay whole\n`,
  );
  return file;
}

/**
 * The model files of a pack a bundle carries (packFiles): both precisions, since int8 serves on a
 * CPU only once its self-check against fp32 passes there (src/packs/precision-check.ts) and fp32
 * serves otherwise; not the zoo's ImageNet file (`backbone`), which the install step only makes
 * the served backbone files from. A pack made by train-head carries only what it holds itself
 * (its base pack is bundled beside it).
 */
function bundledFiles(dir: string, manifest: Manifest): PackFile[] {
  return packFiles(manifest).filter((f) => f.role !== 'backbone' && packFileDir(dir, manifest, f.file) === dir);
}

/**
 * models/: its own files (the warm-up photo); per pack the manifest and documents, and the model
 * files (sha256-checked) of enabled packs, identical files hard-linked. Not the tools folder.
 */
async function copyModels(app: string): Promise<void> {
  const modelsDir = path.join(repoRoot, 'models');
  const bySha = new Map<string, string>();
  for (const entry of readdirSync(modelsDir, { withFileTypes: true }).filter((e) => e.isFile())) {
    copyInto(path.join(modelsDir, entry.name), path.join(app, 'models', entry.name));
  }
  for (const pack of readdirSync(modelsDir).sort()) {
    const dir = path.join(modelsDir, pack);
    if (!existsSync(path.join(dir, 'manifest.json'))) continue;
    const target = path.join(app, 'models', pack);
    mkdirSync(target, { recursive: true });
    for (const file of readdirSync(dir).filter((f) => f === 'manifest.json' || f.endsWith('.md'))) copyFileSync(path.join(dir, file), path.join(target, file));
    const manifest = await readManifest(dir);
    if (manifest.disabled) {
      process.stdout.write(`bundle: models/${pack} is disabled: manifest only\n`);
      continue;
    }
    for (const { file, sha256: expected } of bundledFiles(dir, manifest)) {
      await readModelFile(dir, file, expected); // present and intact
      const destination = path.join(target, file);
      mkdirSync(path.dirname(destination), { recursive: true });
      const same = bySha.get(expected);
      if (same) linkSync(same, destination);
      else copyFileSync(path.join(dir, file), destination);
      bySha.set(expected, destination);
    }
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { cuda: { type: 'boolean', default: false }, 'cuda-arch': { type: 'string', multiple: true }, bench: { type: 'boolean', default: false }, out: { type: 'string' }, fast: { type: 'boolean', default: false }, dir: { type: 'string' }, split: { type: 'string' } },
  });
  if (process.platform !== 'linux' || process.arch !== 'x64') fail(`bundles are for Linux x64; this is ${process.platform} ${process.arch}`);
  if (values.dir !== undefined && (values.out !== undefined || values.fast || values.split !== undefined)) fail('--dir writes a folder: --out, --fast and --split are for the archive');
  const splitMiB = values.split === undefined ? null : Number(values.split);
  if (splitMiB !== null && !(Number.isInteger(splitMiB) && splitMiB >= 1)) fail(`--split takes a whole number of MiB, got "${values.split}"`);
  let archs: number[] = [];
  try {
    archs = [...new Set((values['cuda-arch'] ?? []).flatMap((a) => a.split(',')).map(parseArchitecture))].sort((a, b) => a - b);
  } catch (error) {
    fail(`--cuda-arch: ${(error as Error).message}`);
  }
  const cuda = values.cuda! || archs.length > 0;
  const flavour = (!cuda ? '' : archs.length === 0 ? '-cuda' : `-cuda-${archs.map((a) => `sm${a}`).join('-')}`) + (values.bench ? '-bench' : '');
  const folder = values.dir === undefined ? null : path.resolve(values.dir);
  if (folder && existsSync(path.join(folder, 'catcomfort'))) fail(`${path.join(folder, 'catcomfort')} already exists`);
  if (!folder) {
    try {
      execFileSync('xz', ['--version'], { stdio: 'ignore' });
    } catch {
      fail('xz is not on PATH (the archive is a .tar.xz)');
    }
  }
  if (!existsSync(path.join(repoRoot, 'dist/src/main.js'))) fail('dist/src/main.js is missing: run npm run build:ts');
  if (!existsSync(path.join(release, 'catcomfort.node'))) fail('build/Release/catcomfort.node is missing: run npm run build:native');
  if (values.bench && !existsSync(path.join(repoRoot, 'dist/bench/run.js'))) fail('dist/bench/run.js is missing: run npm run build:ts');
  if (cuda && !existsSync(path.join(release, CUDA_LIBRARY))) fail(`--cuda: build/Release/${CUDA_LIBRARY} is missing (the optional GPU package was not installed)`);
  const cudaLibrary = archs.length > 0 ? cudaLibraryFor(archs) : null;
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  const out = path.resolve(values.out ?? path.join(repoRoot, 'build/bundle', `catcomfort-${pkg.version}-linux-x64${flavour}.tar.xz`));

  const stage = folder ?? mkdtempSync(path.join(os.tmpdir(), 'catcomfort-bundle-'));
  try {
    const top = path.join(stage, 'catcomfort');
    const app = path.join(top, 'app');
    copyNode(top);
    copyJemalloc(top);
    copyInto(path.join(repoRoot, 'package.json'), path.join(app, 'package.json'));
    copyInto(path.join(repoRoot, 'bin/catcomfort-service'), path.join(app, 'bin/catcomfort-service'));
    copyInto(path.join(repoRoot, 'dist/src'), path.join(app, 'dist/src'), (f) => !f.endsWith('.map'));
    copyInto(path.join(repoRoot, 'proto'), path.join(app, 'proto'));
    copyNative(app, cuda, cudaLibrary, values.bench!);
    await copyModels(app);
    if (values.bench) {
      copyInto(path.join(repoRoot, 'dist/bench'), path.join(app, 'dist/bench'), (f) => !f.endsWith('.map'));
      writeFileSync(path.join(top, 'bench'), BENCH_LAUNCHER, { mode: 0o755 });
    }
    const modules = copyProductionModules(repoRoot, path.join(app, 'node_modules'), values.bench ? BENCH_PACKAGES : []);
    process.stdout.write(`bundle: ${modules.length} packages in node_modules; left out: ${Object.keys(LEFT_OUT).join(', ')}\n`);
    for (const [name, text] of Object.entries(LAUNCHERS)) {
      writeFileSync(path.join(top, name), text);
      chmodSync(path.join(top, name), 0o755);
    }
    if (folder) {
      process.stdout.write(`bundle: wrote ${top}; run: ${path.join(top, 'run')}\n`);
      return;
    }

    mkdirSync(path.dirname(out), { recursive: true });
    const partial = `${out}.partial`;
    // x86: the branch/call filter for machine code, most of the archive (Node.js, ffmpeg, the libraries).
    const xz = `xz --x86 --lzma2=preset=${values.fast ? 0 : 9} -T0`;
    execFileSync('tar', ['-C', stage, '--sort=name', '--owner=0', '--group=0', '--numeric-owner', '-I', xz, '-cf', partial, 'catcomfort'], { stdio: 'inherit' });
    renameSync(partial, out);
    const unpacked = Number(execFileSync('du', ['-sb', top], { encoding: 'utf8' }).split('\t')[0]);
    process.stdout.write(`bundle: wrote ${out}: ${mib(statSync(out).size)} (unpacked ${mib(unpacked)}); run: tar -xf ${path.basename(out)} && ./catcomfort/run\n`);
    if (splitMiB !== null) {
      const parts = splitFile(out, splitMiB * 2 ** 20);
      const name = path.basename(out);
      process.stdout.write(`bundle: split into ${parts.length} parts of at most ${splitMiB} MiB (${parts.map((p) => path.basename(p)).join(', ')}) and ${name}.sha256; join: cat ${name}.part-* > ${name} && sha256sum -c ${name}.sha256\n`);
    }
  } finally {
    if (!folder) rmSync(stage, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => fail((error as Error)?.stack ?? String(error)));
