// Where tests find the repository, the shared photos (with their manifest), the model mirror, the
// ONNX Model Zoo's int8 MobileNetV2 and the committed fixtures.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { sharedDirFrom } from '../../src/config';

export const repoRoot = path.resolve(__dirname, '../../..');
export const sharedDir = sharedDirFrom();
export const photosDir = path.join(sharedDir, 'fixtures/photos');
export const photosDevDir = path.join(sharedDir, 'fixtures/photos-dev');
export const modelMirror = path.resolve(repoRoot, process.env.CATCOMFORT_MODEL_MIRROR ?? path.join(sharedDir, 'models'));
export const fixturesDir = path.join(repoRoot, 'test/fixtures');

/** mobilenetv2-12-int8.onnx (never committed): in models/bc-v1 once fetched, else in the mirror; undefined when in neither. */
export const zooMobileNetV2Int8: string | undefined = [
  path.join(repoRoot, 'models/bc-v1/mobilenetv2-12-int8.onnx'),
  path.join(modelMirror, 'mobilenetv2-12-int8/mobilenetv2-12-int8.onnx'),
].find((file) => existsSync(file));

export function photo(name: string): string {
  return path.join(photosDir, name);
}

/** Bytes of a committed fixture in test/fixtures. */
export function fixture(name: string): Buffer {
  return readFileSync(path.join(fixturesDir, name));
}

export interface PhotoEntry {
  file: string;
  path: string;
  group: 'cat' | 'nocat';
  tag: string;
  /** Labelled box of the largest cat, source pixels; null for no-cat photos. */
  box: [number, number, number, number] | null;
  width: number;
  height: number;
}

const manifests = new Map<string, PhotoEntry[]>();

/** The entries of a shared photo set's manifest.json (default: fixtures/photos). */
export function photoEntries(dir: string = photosDir): PhotoEntry[] {
  let entries = manifests.get(dir);
  if (entries === undefined) {
    const images = (JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { images: Array<Omit<PhotoEntry, 'path'>> }).images;
    entries = images.map((e) => ({ ...e, path: path.join(dir, e.file) }));
    manifests.set(dir, entries);
  }
  return entries;
}

export function photoEntry(file: string, dir: string = photosDir): PhotoEntry {
  const entry = photoEntries(dir).find((e) => e.file === file);
  if (entry === undefined) throw new Error(`${file} is not in ${path.join(dir, 'manifest.json')}`);
  return entry;
}
