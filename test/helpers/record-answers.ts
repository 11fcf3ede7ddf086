// Records the answers to ANSWER_CASES (answer-cases.ts) from a service built from this checkout, with
// the front on the main thread: `node dist/test/helpers/record-answers.js > test/fixtures/answers/recorded.json`.
// Run once, at the commit before the HTTP edge had one way; test/recorded-answers.test.ts compares with it.
import { ANSWER_CASES } from './answer-cases';
import { askCase } from './recorded';
import { startServer } from './server';

async function main(): Promise<void> {
  const server = await startServer({ CATCOMFORT_HTTP_THREADS: '1' });
  const recorded: Record<string, unknown> = {};
  try {
    for (const c of ANSWER_CASES) recorded[c.name] = await askCase(server.port, c);
  } finally {
    await server.stop();
  }
  process.stdout.write(`${JSON.stringify(recorded, null, 1)}\n`);
}

void main();
