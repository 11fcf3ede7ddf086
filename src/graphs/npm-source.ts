// Model files that come out of an installed npm package (manifest detector.source): the file is
// found in node_modules, cut to its byte range, checked against its sha256, and, for
// convert: "tflite", converted to ONNX by src/graphs/tflite.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { sha256 } from '../hash';
import { convertTfliteToOnnx } from './tflite/convert';

/** A pack's `source` block (src/packs/manifest.ts's schema checks it): where in which package its bytes are. */
export interface NpmSource {
  npm: string;
  version: string;
  file: string;
  byteRange?: [number, number];
  sha256: string;
  convert?: 'tflite';
}

/** The installed package's folder: node_modules/<name> in `from` or a folder above it. */
export function findPackageDir(name: string, from: string): string | null {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', ...name.split('/'));
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (path.dirname(dir) === dir) return null;
  }
}

/** The source bytes (cut, sha256-checked, not converted). `from`: where node_modules is looked for. */
export function readNpmSource(source: NpmSource, from: string): Buffer {
  const dir = findPackageDir(source.npm, from);
  if (!dir) throw new Error(`npm package ${source.npm} is not installed (it is a dependency: run npm ci)`);
  const version = (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version?: string }).version;
  if (version !== source.version) {
    throw new Error(`npm package ${source.npm} is version ${version ?? '?'} in ${dir}, the manifest names ${source.version} (run npm ci)`);
  }
  const file = path.join(dir, ...source.file.split('/'));
  const whole = readFileSync(file);
  const [start, end] = source.byteRange ?? [0, whole.length];
  if (end > whole.length) throw new Error(`${file} has ${whole.length} bytes; the manifest's byte range ends at ${end}`);
  const bytes = whole.subarray(start, end);
  const actual = sha256(bytes);
  if (actual !== source.sha256) {
    throw new Error(`bytes [${start}, ${end}) of ${file} have sha256 ${actual}, the manifest expects ${source.sha256}`);
  }
  return bytes;
}

/** The model file the source makes: the cut bytes, converted when `convert` says so. */
export function buildFromNpmSource(source: NpmSource, from: string): Buffer {
  const bytes = readNpmSource(source, from);
  switch (source.convert) {
    case undefined:
      return bytes;
    case 'tflite':
      return convertTfliteToOnnx(bytes).onnx;
  }
}
