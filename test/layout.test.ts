// The house's layout: no import circle between source files, nor between rooms (the folders of
// src/ and its top-level files), type-only imports included, so arrows run one way.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from './helpers/paths';

const src = path.join(repoRoot, 'src');
const files = readdirSync(src, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => path.join(src, f));

/** Each file's relative imports (import, export ... from, import()), as files. */
function importsOf(file: string): string[] {
  const out: string[] = [];
  for (const [, spec] of readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']*)'/g)) {
    const base = path.resolve(path.dirname(file), spec!);
    const target = [`${base}.ts`, path.join(base, 'index.ts')].find((f) => existsSync(f));
    if (target) out.push(target);
  }
  return out;
}

/** A circle in `graph` as a list of its nodes, or null. */
function findCircle(graph: Map<string, Set<string>>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const trail: string[] = [];
  const visit = (node: string): string[] | null => {
    if (state.get(node) === 'done') return null;
    if (state.get(node) === 'open') return [...trail.slice(trail.indexOf(node)), node];
    state.set(node, 'open');
    trail.push(node);
    for (const next of graph.get(node) ?? []) {
      const circle = visit(next);
      if (circle) return circle;
    }
    trail.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of graph.keys()) {
    const circle = visit(node);
    if (circle) return circle;
  }
  return null;
}

const room = (file: string) => path.relative(src, file).split(path.sep)[0]!.replace(/\.ts$/, '');

test('no import circle between files of src/', () => {
  const graph = new Map(files.map((f) => [path.relative(src, f), new Set(importsOf(f).map((t) => path.relative(src, t)))]));
  assert.ok([...graph.values()].some((s) => s.size > 0), 'imports were found');
  assert.equal(findCircle(graph)?.join(' -> ') ?? null, null);
});

test('no import circle between rooms of src/ (packs, graphs, store, http, ...)', () => {
  const graph = new Map<string, Set<string>>();
  for (const file of files) {
    for (const target of importsOf(file)) {
      if (room(file) !== room(target)) (graph.get(room(file)) ?? graph.set(room(file), new Set()).get(room(file))!).add(room(target));
    }
  }
  assert.ok(graph.get('packs')?.has('graphs'), 'packs use graphs');
  assert.equal(findCircle(graph)?.join(' -> ') ?? null, null);
});
