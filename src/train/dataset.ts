// The labelled photos of train-head --data: a folder with comfort/ and discomfort/ subfolders of
// photos (walked recursively, symbolic links followed), or a CSV file of `path,label` lines (paths
// relative to the CSV's folder; label comfort/discomfort or 0/1; an optional header line
// `path,label`). Problems are thrown as DatasetError with a message for the operator.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

export class DatasetError extends Error {}

/** 1 = discomfort (the score's class), 0 = comfort. */
export type Label = 0 | 1;

export interface LabelledPhoto {
  file: string;
  label: Label;
}

export const LABEL_NAMES = ['comfort', 'discomfort'] as const;

const IMAGE_EXTENSIONS = new Set(['.jpg', '.jpeg', '.png', '.webp', '.gif', '.tif', '.tiff', '.avif', '.heic', '.heif']);

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(dir)).sort()) {
    if (name.startsWith('.')) continue;
    const full = path.join(dir, name);
    const info = await stat(full).catch(() => null);
    if (info?.isDirectory()) out.push(...(await walk(full)));
    else if (info?.isFile() && IMAGE_EXTENSIONS.has(path.extname(name).toLowerCase())) out.push(full);
  }
  return out;
}

async function fromFolders(dir: string): Promise<LabelledPhoto[]> {
  const photos: LabelledPhoto[] = [];
  for (const [label, name] of LABEL_NAMES.entries()) {
    const sub = path.join(dir, name);
    if (!(await stat(sub).catch(() => null))?.isDirectory()) {
      throw new DatasetError(`${dir} has no ${name}/ folder (it needs comfort/ and discomfort/ folders of photos, or give a CSV of path,label)`);
    }
    photos.push(...(await walk(sub)).map((file) => ({ file, label: label as Label })));
  }
  return photos;
}

function parseLabel(text: string): Label | null {
  const t = text.trim().toLowerCase();
  if (t === 'discomfort' || t === '1') return 1;
  if (t === 'comfort' || t === '0') return 0;
  return null;
}

function unquote(field: string): string {
  const t = field.trim();
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1).replaceAll('""', '"') : t;
}

async function fromCsv(file: string): Promise<LabelledPhoto[]> {
  const lines = (await readFile(file, 'utf8')).split(/\r?\n/);
  const photos: LabelledPhoto[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    const comma = line.lastIndexOf(',');
    const [rawPath, rawLabel] = comma < 0 ? [line, ''] : [line.slice(0, comma), line.slice(comma + 1)];
    if (i === 0 && unquote(rawPath).toLowerCase() === 'path' && unquote(rawLabel).toLowerCase() === 'label') return;
    const label = parseLabel(unquote(rawLabel));
    if (label === null || unquote(rawPath) === '') {
      throw new DatasetError(`${file} line ${i + 1}: expected "path,label" with label comfort, discomfort, 0 or 1; got "${line}"`);
    }
    photos.push({ file: path.resolve(path.dirname(file), unquote(rawPath)), label });
  });
  return photos;
}

/** The photos and labels of --data, in a fixed order (folder walk sorted by name; CSV order). */
export async function readDataset(data: string): Promise<LabelledPhoto[]> {
  const info = await stat(data).catch(() => null);
  if (!info) throw new DatasetError(`--data ${data} does not exist`);
  const photos = info.isDirectory() ? await fromFolders(data) : await fromCsv(data);
  for (const [label, name] of LABEL_NAMES.entries()) {
    if (!photos.some((p) => p.label === label)) throw new DatasetError(`${data} holds no ${name} photos`);
  }
  return photos;
}
