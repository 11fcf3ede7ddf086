// The house's layout: no import circle between source files, nor between rooms (the folders of
// src/ and its top-level files, and bench/), type-only imports included; and every import runs
// down the declared floors (README.md "Architecture"), the few known exceptions listed below.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from './helpers/paths';

/**
 * The floors, top to bottom: a room may import rooms of its own floor and of the floors below,
 * never above. start → interfaces (and the inspection page) → packs → pipeline → native; ops, the
 * HTTP front, http (exchanges, router, bodies, errors), config, store, keys, log, hash and lent memory below them; graphs only for packs, tools and training; the commands and tools on top, and
 * bench above all. A room named here may not exist yet (errors: the error room).
 */
const FLOORS: ReadonlyArray<readonly string[]> = [
  ['bench'],
  ['cli', 'tools', 'train', 'main', 'front-thread-main'],
  ['start', 'error-renderers'],
  ['stream'],
  ['v1', 'v2', 'scan', 'oip', 'inspect'],
  ['service'],
  ['packs'],
  ['pipeline', 'graphs'],
  ['native'],
  ['ops'],
  ['front'],
  ['http'],
  ['config', 'store', 'keys'],
  ['errors', 'log', 'hash', 'timing', 'memory'],
];
/** The only rooms that may import graphs/. */
const GRAPHS_USERS = new Set(['graphs', 'packs', 'tools', 'train', 'bench']);

/** Upward imports the code has today (`file -> room above it`), each a known debt; an entry no longer needed fails too. */
const UPWARD_DEBTS = new Set<string>([]);

const sources = (dir: string) =>
  readdirSync(path.join(repoRoot, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.split(path.sep).includes('node_modules'))
    .map((f) => path.join(repoRoot, dir, f));
const files = [...sources('src'), ...sources('bench')];
const rel = (file: string) => path.relative(repoRoot, file);

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

/** src/x/... -> x, src/x.ts -> x, bench/... -> bench, test/... -> test. */
function room(file: string): string {
  const [top, next] = rel(file).split(path.sep);
  return top === 'src' ? next!.replace(/\.ts$/, '') : top!;
}
const floorOf = (r: string) => FLOORS.findIndex((rooms) => rooms.includes(r));

test('no import circle between files of src/ and bench/', () => {
  const graph = new Map(files.map((f) => [rel(f), new Set(importsOf(f).map(rel))]));
  assert.ok([...graph.values()].some((s) => s.size > 0), 'imports were found');
  assert.equal(findCircle(graph)?.join(' -> ') ?? null, null);
});

test('no import circle between rooms (packs, graphs, store, http, ..., bench)', () => {
  const graph = new Map<string, Set<string>>();
  for (const file of files) {
    for (const target of importsOf(file)) {
      if (room(file) !== room(target)) (graph.get(room(file)) ?? graph.set(room(file), new Set()).get(room(file))!).add(room(target));
    }
  }
  assert.ok(graph.get('packs')?.has('graphs'), 'packs use graphs');
  assert.equal(findCircle(graph)?.join(' -> ') ?? null, null);
});

test('every import runs down the declared floors; graphs serve only packs, tools and training', () => {
  assert.deepEqual([...new Set(files.map(room))].filter((r) => floorOf(r) < 0), [], 'each room has its floor in FLOORS');
  const upward: string[] = [];
  const graphsUsers = new Set<string>();
  for (const file of files) {
    for (const target of importsOf(file).filter((t) => floorOf(room(t)) >= 0)) {
      if (floorOf(room(target)) < floorOf(room(file))) upward.push(`${rel(file)} -> ${room(target)}`);
      if (room(target) === 'graphs') graphsUsers.add(room(file));
    }
  }
  const found = new Set(upward);
  assert.deepEqual([...found].filter((u) => !UPWARD_DEBTS.has(u)), [], 'upward imports (a room imports one on a floor above it)');
  assert.deepEqual([...UPWARD_DEBTS].filter((d) => !found.has(d)), [], 'debts paid: remove them from UPWARD_DEBTS');
  assert.deepEqual([...graphsUsers].filter((r) => !GRAPHS_USERS.has(r)), [], 'rooms importing graphs/');
});
