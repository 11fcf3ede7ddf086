// Links between the code and the docs cannot rot. Code, comments, messages and docs name a section
// as its page's path followed by its title in double quotes (README.md, bench/README.md or
// docs/<page>.md, then the title; a title may be cut before its ":" or " (" part). This test finds
// every such quote in the tracked source folders and fails, naming file:line, when the page has no
// heading with that title; it also refuses the old form (README followed by a title) that names
// no page, and a docs/<page>.md named anywhere that does not exist. Every relative markdown link in
// README.md, docs/*.md, bench/README.md and the model cards must point to a file that exists, and
// its #anchor to a heading there (GitHub's slugs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const SCANNED = ['src', 'native', 'bench', 'test', 'test-proxies', 'clients', 'models', 'ops', 'docs', 'proto', 'README.md', 'Dockerfile', 'compose.yaml', '.ci'];
const SKIPPED = new Set(['node_modules', 'build', 'dist', '.venv', '__pycache__', 'results', 'fixtures']);
const TEXT = /\.(ts|js|cc|h|py|md|json|ya?ml|sh|proto)$|^(Dockerfile|run)$/;
const QUOTE = /(?<![\w/.-])((?:docs\/[\w-]+|bench\/README|README)\.md),? \(?\\?"([^"\\\n]+)\\?"/g;
const OLD_FORM = /(?<![\w/.-])README,? \(?\\?"([^"\\\n]+)\\?"/g;
const PAGE = /(?<![\w/.-])docs\/[\w-]+\.md/g;
const LINK = /\]\(([^)\s]+)\)/g;

function files(rel: string): string[] {
  const full = path.join(root, rel);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return TEXT.test(path.basename(rel)) ? [rel] : [];
  return readdirSync(full).filter((name) => !SKIPPED.has(name)).flatMap((name) => files(path.join(rel, name)));
}

/** Heading texts of a markdown file, outside fenced code. */
function headings(rel: string): string[] {
  let fenced = false;
  const out: string[] = [];
  for (const line of readFileSync(path.join(root, rel), 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (m?.[1]) out.push(m[1]);
  }
  return out;
}

const hasTitle = (rel: string, title: string): boolean =>
  headings(rel).some((h) => h === title || h.startsWith(`${title}:`) || h.startsWith(`${title} (`));

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string): string => heading.toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');

/** Every line of every scanned file, with its place. */
function lines(): Array<{ at: string; line: string }> {
  return SCANNED.flatMap(files).flatMap((rel) =>
    readFileSync(path.join(root, rel), 'utf8').split('\n').map((line, i) => ({ at: `${rel}:${i + 1}`, line })),
  );
}

test('every quoted section title names a heading of the page it names', () => {
  const problems: string[] = [];
  let quotes = 0;
  for (const { at, line } of lines()) {
    for (const m of line.matchAll(QUOTE)) {
      const [page, title] = [m[1] ?? '', m[2] ?? ''];
      quotes++;
      if (!existsSync(path.join(root, page))) problems.push(`${at}: ${page} does not exist (quoted for "${title}")`);
      else if (!hasTitle(page, title)) problems.push(`${at}: ${page} has no heading "${title}"`);
    }
    for (const m of line.matchAll(OLD_FORM)) problems.push(`${at}: "${m[1]}" follows a bare README, which names no page: write README.md or docs/<page>.md`);
    for (const [page] of line.matchAll(PAGE)) if (!existsSync(path.join(root, page))) problems.push(`${at}: ${page} does not exist`);
  }
  assert.ok(quotes > 30, `only ${quotes} quotes found: is the pattern still right?`);
  assert.deepEqual(problems, []);
});

test('every relative markdown link points to an existing file and heading', () => {
  const pages = ['README.md', 'bench/README.md', ...files('docs').filter((f) => f.endsWith('.md')), ...files('models').filter((f) => f.endsWith('.md'))];
  const problems: string[] = [];
  for (const page of pages) {
    readFileSync(path.join(root, page), 'utf8').split('\n').forEach((line, i) => {
      for (const m of line.matchAll(LINK)) {
        const target = m[1] ?? '';
        if (/^[a-z]+:/.test(target)) continue;
        const [file = '', anchor] = target.split('#');
        const rel = file === '' ? page : path.join(path.dirname(page), file);
        if (!existsSync(path.join(root, rel))) problems.push(`${page}:${i + 1}: ${target}: no such file`);
        else if (anchor !== undefined && !headings(rel).some((h) => slug(h) === anchor)) problems.push(`${page}:${i + 1}: ${target}: no heading with that anchor`);
      }
    });
  }
  assert.deepEqual(problems, []);
});
