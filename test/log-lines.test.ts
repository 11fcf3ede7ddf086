// The service's stdout lines (src/log.ts linesPerTurn): gathered and written once per turn of the
// event loop, yet none lost when the process exits in the turn that logged them: by process.exit,
// by an uncaught exception, or because the loop ran dry; each line whole and in order. No write holds
// more than PIPE_BUF bytes (a longer line alone), so lines the front threads write to the same pipe never mix.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { LineGatherer, PIPE_BUF } from '../src/log';

const logModule = path.join(__dirname, '..', 'src', 'log.js');

/** Runs `ending` in a child that logs `lines` lines in one turn (after linesPerTurn), then ends; its stdout lines, parsed. */
function linesOf(ending: string, lines = 3000): { status: number | null; parsed: Array<Record<string, unknown>> } {
  const script = `const { linesPerTurn, log } = require(${JSON.stringify(logModule)});
linesPerTurn();
for (let i = 0; i < ${lines}; i++) log.info('request', { i, pad: 'x'.repeat(200) });
${ending}`;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const parsed = child.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
  return { status: child.status, parsed };
}

for (const [how, ending, exitCode] of [
  ['process.exit in the same turn', 'process.exit(3);', 3],
  ['an uncaught exception in the same turn', "throw new Error('boom');", 1],
  ['the loop running dry', '', 0],
  ['a line in a later turn', "setImmediate(() => log.info('later', { i: -1 }));", 0],
] as const) {
  test(`stdout lines gathered per turn are all written, whole and in order: ${how}`, () => {
    const { status, parsed } = linesOf(ending);
    assert.equal(status, exitCode);
    assert.deepEqual(parsed.filter((l) => l.msg === 'request').map((l) => l.i), Array.from({ length: 3000 }, (_, i) => i));
    if (ending.startsWith('setImmediate')) assert.equal(parsed.at(-1)?.msg, 'later');
  });
}

test('a turn\'s lines go out in writes of at most PIPE_BUF bytes of whole lines, counted in bytes; a longer line alone', async () => {
  const writes: string[] = [];
  const lines = new LineGatherer({ write: (text: string) => writes.push(text) });
  lines.gatherPerTurn();
  const sent = Array.from({ length: 300 }, (_, i) => `{"i":${i},"pad":"${(i % 3 === 0 ? '猫' : 'x').repeat(40 + ((i * 37) % 700))}"}\n`);
  sent.splice(150, 0, `{"long":"${'y'.repeat(PIPE_BUF + 500)}"}\n`);
  for (const line of sent) lines.write(line);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(writes.join(''), sent.join(''));
  assert.ok(writes.length > 1);
  for (const text of writes) {
    assert.ok(text.endsWith('\n'));
    assert.ok(Buffer.byteLength(text) <= PIPE_BUF || text.split('\n').length === 2, `a write of ${Buffer.byteLength(text)} bytes`);
  }
  // Every write but the last is full: the next line would not have fitted.
  for (let i = 0, at = 0; i < writes.length - 1; at += writes[i]!.split('\n').length - 1, i++) {
    const next = sent[at + writes[i]!.split('\n').length - 1]!;
    assert.ok(Buffer.byteLength(writes[i]!) + Buffer.byteLength(next) > PIPE_BUF, `write ${i}`);
  }
});
