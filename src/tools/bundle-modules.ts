// The production node_modules of the offline bundle (src/tools/bundle.ts): what the service loads
// at run time on Linux x64, copied from the installed tree. Walked from package.json's
// dependencies through each installed package's own dependencies (optional ones when installed);
// no devDependencies, and of packages that ship files for many platforms only this one's; no tests,
// documents, type declarations or source maps.
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface Manifest {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/** Packages of which only some files are needed; `dependencies: false` = not their code either. */
const ONLY_FILES: Record<string, { files: string[]; dependencies: boolean }> = {
  // Static assets served by src/http/docs/pages.ts: not the libraries behind them.
  redoc: { files: ['package.json', 'LICENSE', 'bundles/redoc.standalone.js'], dependencies: false },
  'swagger-ui-dist': { files: ['package.json', 'LICENSE', 'swagger-ui.css', 'swagger-ui-bundle.js'], dependencies: false },
  // src/http/uws.ts loads the binary of this platform and Node ABI directly (18 ship in the package).
  '@trufflesuite/uws-js-unofficial': {
    files: ['package.json', 'LICENSE', `binaries/uws_linux_x64_${process.versions.modules}.node`],
    dependencies: false,
  },
  // The compiled addon and its JavaScript; not the SQLite sources and objects it was built from.
  'better-sqlite3': { files: ['package.json', 'LICENSE', 'lib', 'build/Release/better_sqlite3.node'], dependencies: true },
  // The CommonJS build the service requires (and the subpath folders that point into it), not the ES modules one.
  '@sinclair/typebox': { files: ['package.json', 'license', 'build/cjs', 'compiler', 'errors', 'parser', 'syntax', 'system', 'type', 'value'], dependencies: true },
};

/** Top-level folders of a package that nothing loads at run time. */
const DEVELOPMENT_FOLDERS = new Set(['test', 'tests', '__tests__', 'docs', 'doc', 'example', 'examples', 'benchmark', 'benchmarks', 'bench', '.github']);

/** Whether a file or folder of a package (its path inside the package) goes into the bundle. */
function runtimeFile(relative: string): boolean {
  const parts = relative.split(path.sep);
  if (parts[0] === 'node_modules' || DEVELOPMENT_FOLDERS.has(parts[0]!)) return false; // nested packages: the walk copies them
  const base = parts[parts.length - 1]!;
  if (/^(licen[cs]e|copying|notice)/i.test(base)) return true;
  return !/\.(d\.[cm]?ts|map|md|markdown)$/i.test(base); // type declarations, source maps, documents
}

/** Dependencies that the running service never loads, and why. */
export const LEFT_OUT: Record<string, string> = {
  '@mediapipe/objectron': 'install-time source of the bc-v1 detector, which the bundle ships converted in its pack',
  'com.github.asus4.onnxruntime': 'build-time headers; its Linux x64 library is in build/Release',
  'com.github.asus4.onnxruntime.linux-x64-gpu': 'its provider libraries are in build/Release (the CUDA one with --cuda)',
  'prebuild-install': "better-sqlite3's install-time binary downloader",
  '@types/node': "type declarations, which protobufjs (under the gRPC service's proto loader) lists as a dependency",
};

/** Node's lookup: node_modules/<name> in `from` or a folder above it, up to `root`. */
function resolvePackage(name: string, from: string, root: string): string | null {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === root || path.dirname(dir) === dir) return null;
  }
}

function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest;
}

/**
 * Copies the run-time packages of the project at `root` (and `extra` ones, with their dependencies)
 * into `target` (a node_modules folder), keeping each package's place in the tree. Returns the
 * copied packages' paths inside node_modules.
 */
export function copyProductionModules(root: string, target: string, extra: string[] = []): string[] {
  const modulesDir = path.join(root, 'node_modules');
  const copied = new Set<string>();
  const visit = (name: string, from: string, optional: boolean) => {
    if (LEFT_OUT[name]) return;
    const dir = resolvePackage(name, from, root);
    if (!dir) {
      if (optional) return;
      throw new Error(`dependency ${name} (needed from ${from}) is not installed: run npm ci`);
    }
    const relative = path.relative(modulesDir, dir);
    if (copied.has(relative)) return;
    copied.add(relative);
    const destination = path.join(target, relative);
    const only = ONLY_FILES[name];
    if (only) {
      for (const file of only.files) {
        mkdirSync(path.dirname(path.join(destination, file)), { recursive: true });
        cpSync(path.join(dir, file), path.join(destination, file), { recursive: true, dereference: true });
      }
    } else {
      cpSync(dir, destination, {
        recursive: true,
        dereference: true,
        filter: (source) => runtimeFile(path.relative(dir, source)),
      });
    }
    if (only && !only.dependencies) return;
    const manifest = readManifest(dir);
    for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(dependency, dir, false);
    for (const dependency of Object.keys(manifest.optionalDependencies ?? {})) visit(dependency, dir, true);
  };
  const project = readManifest(root);
  for (const name of Object.keys(project.dependencies ?? {})) visit(name, root, false);
  for (const name of Object.keys(project.optionalDependencies ?? {})) visit(name, root, true);
  for (const name of extra) visit(name, root, false);
  return [...copied].sort();
}
