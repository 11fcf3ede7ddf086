// A burst: N client connections opened at once, each sending one request, and what they got back
// (answers by status, Retry-After on 429s, connections closed or reset without an answer). Used by
// test/burst.test.ts and for the burst figures of docs/operations.md "Bursts":
//   node dist/bench/burst.js URL KEY [CONNECTIONS] [IMAGE]   (e.g. http://127.0.0.1:8080/v2/predict)
// Raise `ulimit -n` above CONNECTIONS first. Only loopback URLs are accepted.
import { readFileSync } from 'node:fs';
import net from 'node:net';

export interface BurstResult {
  connections: number;
  statuses: Record<string, number>;
  /** 429s without a Retry-After field. */
  retryAfterMissing: number;
  /** Connections that ended without a complete answer. */
  unanswered: number;
  seconds: number;
}

function one(host: string, port: number, request: Buffer): Promise<{ status: number | null; retryAfter: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    let text = '';
    let done = false;
    const finish = (status: number | null, retryAfter = false) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve({ status, retryAfter });
    };
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = text.slice(0, end);
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? NaN);
      if (text.length - end - 4 >= length) finish(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), /\r\nretry-after:/i.test(head));
    });
    socket.on('error', () => undefined);
    socket.on('close', () => finish(null));
  });
}

export async function burst(url: string, apiKey: string, connections: number, image: Buffer): Promise<BurstResult> {
  const target = new URL(url);
  if (!(target.hostname === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(target.hostname))) throw new Error(`bursts go only to loopback addresses, not ${target.hostname}`);
  const body = JSON.stringify({ image: image.toString('base64') });
  const request = Buffer.from(
    `POST ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\napi-key: ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    'latin1',
  );
  const started = performance.now();
  const answers = await Promise.all(Array.from({ length: connections }, () => one(target.hostname, Number(target.port), request)));
  const statuses: Record<string, number> = {};
  let retryAfterMissing = 0;
  let unanswered = 0;
  for (const { status, retryAfter } of answers) {
    if (status === null) unanswered++;
    else statuses[status] = (statuses[status] ?? 0) + 1;
    if (status === 429 && !retryAfter) retryAfterMissing++;
  }
  return { connections, statuses, retryAfterMissing, unanswered, seconds: Math.round(performance.now() - started) / 1000 };
}

if (require.main === module) {
  const [url, key, count, imagePath] = process.argv.slice(2);
  if (!url || !key) {
    process.stderr.write('usage: node dist/bench/burst.js URL KEY [CONNECTIONS] [IMAGE]\n');
    process.exit(2);
  }
  const image = readFileSync(imagePath ?? require.resolve('../../test/fixtures/chelsea.webp'));
  burst(url, key, Number(count ?? 2000), image).then((result) => process.stdout.write(`${JSON.stringify(result)}\n`));
}
