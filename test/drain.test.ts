// Drain on SIGTERM (docs/fleet.md "Drain"): /readyz answers 503 at once while new connections are
// still served for CATCOMFORT_DRAIN_DELAY_MS, so a load balancer stops sending before the port
// closes; then the port refuses connections and the process exits 0. SIGINT ends the delay.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { photo } from './helpers/paths';
import { startServer, TEST_KEY } from './helpers/server';
import { waitFor } from './helpers/wait';

const body = JSON.stringify({ image: readFileSync(photo('000_skimage_chelsea.png')).toString('base64') });

/** One request on a connection of its own (no pooled connection opened before the signal). */
function fresh(port: number, method: string, path: string, payload?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'api-key': TEST_KEY, ...(payload !== undefined && { 'content-type': 'application/json' }) };
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

function connectError(port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(null);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

test('SIGTERM: not ready at once, new connections still answered during the drain delay; SIGINT ends the delay', async () => {
  const server = await startServer({ CATCOMFORT_DRAIN_DELAY_MS: '600000', CATCOMFORT_SCAN_WORKERS: '0' });
  try {
    server.child.kill('SIGTERM');
    await waitFor('the drain line', () => server.output().includes('"msg":"draining: not ready, still serving"'));
    const ready = await fresh(server.port, 'GET', '/readyz');
    assert.equal(ready.status, 503);
    assert.equal(JSON.parse(ready.text).status, 'draining');
    const oipReady = await fresh(server.port, 'GET', '/v2/health/ready');
    assert.equal(oipReady.status, 503);
    const predict = await fresh(server.port, 'POST', '/v2/predict', body);
    assert.equal(predict.status, 200, predict.text);
    assert.equal(JSON.parse(predict.text).detection, 'detected');
    assert.ok(!server.output().includes('stopped accepting connections'));
    server.child.kill('SIGINT');
    await server.stop();
    assert.equal(server.child.exitCode, 0, server.output());
    assert.ok(server.output().includes('"msg":"stopped accepting connections"'));
  } finally {
    await server.stop();
  }
});

test('after the drain delay the port refuses connections and the process exits 0', async () => {
  const server = await startServer({ CATCOMFORT_DRAIN_DELAY_MS: '200', CATCOMFORT_SCAN_WORKERS: '0' });
  try {
    server.child.kill('SIGTERM');
    await waitFor('the port closed', () => server.output().includes('"msg":"stopped accepting connections"'));
    assert.equal(await connectError(server.port), 'ECONNREFUSED');
    await server.stop();
    assert.equal(server.child.exitCode, 0, server.output());
  } finally {
    await server.stop();
  }
});
