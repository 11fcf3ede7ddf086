// Every model file a pack names, in one list: what the install step obtains or makes, what a
// bundle carries, what validate-pack checks. And where a pack's file lives: in its own folder, or,
// for a pack made by train-head (manifest filesFrom), in its base pack's folder beside it.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ImagenetBackboneManifest, Manifest, NpmSourceManifest } from './manifest';

export type PackFileRole = 'detector' | 'detector-int8' | 'calibration' | 'classifier' | 'backbone' | 'backbone-float' | 'backbone-int8' | 'head' | 'reference-photo';

export interface PackFile {
  role: PackFileRole;
  file: string;
  sha256: string;
  url?: string;
  mirrorPath?: string;
  source?: NpmSourceManifest;
}

export function packFiles(m: Manifest): PackFile[] {
  const { int8, ...detector } = m.detector;
  const out: PackFile[] = [{ role: 'detector', ...pick(detector) }];
  if (int8) {
    out.push({ role: 'detector-int8', file: int8.file, sha256: int8.sha256 });
    out.push({ role: 'calibration', ...int8.calibration });
  }
  const c = m.classifier;
  if ('backbone' in c) {
    out.push({ role: 'backbone', ...pick(c.backbone) });
    out.push({ role: 'backbone-float', ...c.backbone.float });
    out.push({ role: 'backbone-int8', ...c.backbone.int8 });
    out.push({ role: 'head', ...c.head });
  } else {
    out.push({ role: 'classifier', file: c.file, sha256: c.sha256 });
  }
  for (const photo of m.selfCheck?.photos ?? []) out.push({ role: 'reference-photo', file: photo.file, sha256: photo.sha256 });
  return out;
}

function pick(f: { file: string; sha256: string; url?: string; mirrorPath?: string; source?: NpmSourceManifest }) {
  const { file, sha256, url, mirrorPath, source } = f;
  return { file, sha256, ...(url && { url }), ...(mirrorPath && { mirrorPath }), ...(source && { source }) };
}

/** The ImageNet backbone file a precision runs: our 7-bit int8 requantization, or (fp32) the float copy. */
export function backboneFile(backbone: ImagenetBackboneManifest, precision: 'int8' | 'fp32'): { file: string; sha256: string } {
  return precision === 'int8' ? backbone.int8 : backbone.float;
}

/** The folder a pack's file is read from: the pack's own, else (filesFrom) its base pack's. */
export function packFileDir(dir: string, m: Manifest, file: string): string {
  if (m.filesFrom === undefined || existsSync(path.join(dir, file))) return dir;
  return path.join(path.dirname(dir), m.filesFrom);
}
