// A camera's view of latency (BENCH_ONLY=us-stream): each fixture photo sent at one client over a
// live stream (GET /v2/stream, one frame at a time, each waited for) and as POST /v2/predict over a
// kept-alive HTTP connection, the two alternating photo by photo so both see the same machine; the
// time from sending to the whole answer, p50 and p99 of each way over ROUNDS passes of the photos.
import WebSocket from 'ws';
import { percentile } from './common';
import { predictBody } from './protocols';

export interface StreamLatency {
  rounds: number;
  photos: number;
  /** Milliseconds, p50 and p99 of each way. */
  http: { p50Ms: number; p99Ms: number };
  stream: { p50Ms: number; p99Ms: number };
}

/** Opens a keyed stream at `url`; resolves once its settings answer has come. */
function openStream(url: string, apiKey: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${url.replace('http', 'ws')}/v2/stream`);
    socket.once('open', () => socket.send(JSON.stringify({ api_key: apiKey })));
    socket.once('message', () => resolve(socket));
    socket.once('error', reject);
    socket.once('close', (code) => reject(new Error(`the stream closed with ${code}`)));
  });
}

function frameAnswer(socket: WebSocket, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const closed = (code: number) => reject(new Error(`the stream closed with ${code}`));
    socket.once('close', closed);
    socket.once('message', (data) => {
      socket.off('close', closed);
      const message = JSON.parse(data.toString()) as { type: string };
      if (message.type === 'result') resolve();
      else reject(new Error(`the stream answered ${data.toString().slice(0, 200)}`));
    });
    socket.send(bytes);
  });
}

export async function streamLatency(url: string, apiKey: string, photos: Array<{ bytes: Buffer }>, rounds: number): Promise<StreamLatency> {
  const socket = await openStream(url, apiKey);
  const http: number[] = [];
  const stream: number[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      for (const [i, photo] of photos.entries()) {
        const overHttp = async () => {
          const started = performance.now();
          const res = await fetch(`${url}/v2/predict`, { method: 'POST', headers: { 'api-key': apiKey, 'content-type': 'application/json' }, body: predictBody(photo.bytes) });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`/v2/predict answered ${res.status}`);
          http.push(performance.now() - started);
        };
        const overStream = async () => {
          const started = performance.now();
          await frameAnswer(socket, photo.bytes);
          stream.push(performance.now() - started);
        };
        // Each way goes first for every other photo (the second finds the photo's bytes warm).
        for (const way of i % 2 === 0 ? [overHttp, overStream] : [overStream, overHttp]) await way();
      }
    }
  } finally {
    socket.close(1000);
  }
  const summary = (ms: number[]) => {
    const sorted = [...ms].sort((a, b) => a - b);
    return { p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
  };
  return { rounds, photos: photos.length, http: summary(http), stream: summary(stream) };
}
