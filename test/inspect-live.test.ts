// The inspection page's live camera (/inspect "Live camera", src/inspect/page/live.ts) in a real
// browser: Debian's Chromium driven by playwright-core, its fake camera playing a video made here
// from fixture photos (a cat, then a cup of coffee, looped), against the real service over the live
// stream. The page must draw a green box on the cat frames' answers and none on the coffee's (read in
// its canvas pixels and dataset at the same moment), count frames analysed and skipped, and say that
// the classifier is the untrained reference beside the comfort line, in both modes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ffmpegFor } from '../src/config';
import { photo } from './helpers/paths';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (Debian package chromium; .ci/run installs it)`;
const GREEN = [0, 200, 83];
/** Frames of each photo in the video (the fake camera plays it at its own pace, looped). */
const FRAMES_EACH = 45;

let server: TestServer;
let browser: Browser;
let page: Page;
let folder: string;
/** Requests the page tried to send anywhere but the service: refused, and must stay empty. */
const outside: string[] = [];

/** An MJPEG video of `photos` in turn, each padded to 640x480 and held for FRAMES_EACH frames. */
function cameraVideo(photos: string[], file: string): void {
  const inputs = photos.flatMap((p) => ['-loop', '1', '-framerate', '30', '-t', String(FRAMES_EACH / 30), '-i', p]);
  const scaled = photos.map((_, i) => `[${i}]scale=640:480:force_original_aspect_ratio=decrease,pad=640:480:(ow-iw)/2:(oh-ih)/2:color=white,setsar=1,format=yuvj420p[v${i}]`);
  const filter = `${scaled.join(';')};${photos.map((_, i) => `[v${i}]`).join('')}concat=n=${photos.length}:v=1[out]`;
  execFileSync(ffmpegFor('the tests'), ['-hide_banner', '-loglevel', 'error', ...inputs, '-filter_complex', filter, '-map', '[out]', '-q:v', '3', '-f', 'mjpeg', file]);
}

before(async () => {
  if (skip) return;
  folder = mkdtempSync(path.join(os.tmpdir(), 'cc-live-'));
  const video = path.join(folder, 'camera.mjpeg');
  cameraVideo([photo('000_skimage_chelsea.png'), photo('111_skimage_coffee.png')], video);
  server = await startServer({});
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--no-first-run',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-video-capture=${video}`,
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 }, deviceScaleFactor: 1 });
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.origin === server.url) return route.continue();
    outside.push(url.href);
    return route.abort();
  });
  page = await context.newPage();
  await page.goto(`${server.url}/inspect`);
  await page.fill('#key', TEST_KEY);
  await page.click('#key-form button[type="submit"]');
  await page.locator('#key-state', { hasText: 'key accepted' }).waitFor();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

/** What the live section shows now: its dataset and, where it says a box is drawn, the canvas pixels on the box's edges (read in one go). */
const showing = () =>
  page.locator('#live').evaluate((section: HTMLElement) => {
    const canvas = section.querySelector('canvas')!;
    const { detection, box, analysed, skipped } = section.dataset;
    const edges: number[][] = [];
    if (box) {
      const [x0, y0, x1, y1] = box.split(',').map(Number) as [number, number, number, number];
      const g = canvas.getContext('2d')!;
      const at = (x: number, y: number) => [...g.getImageData(Math.min(x, canvas.width - 1), Math.min(y, canvas.height - 1), 1, 1).data.slice(0, 3)];
      edges.push(at(x0, Math.floor((y0 + y1) / 2)), at(Math.floor((x0 + x1) / 2), y0), at(x1, Math.floor((y0 + y1) / 2)), at(Math.floor((x0 + x1) / 2), y1));
    }
    return { detection: detection ?? '', box: box ?? '', edges, analysed: Number(analysed ?? 0), skipped: Number(skipped ?? 0) };
  });

describe('the live camera', { skip }, () => {
  test('draws a box on the cat frames and none on the others, counts frames, and says the classifier is untrained', async () => {
    await page.click('#live-start');
    const seen = new Set<string>();
    await waitFor(
      'answers for the cat and for the coffee',
      async () => {
        const now = await showing();
        if (now.detection === 'detected') {
          assert.notEqual(now.box, '', 'a detected cat has its box drawn');
          for (const edge of now.edges) assert.deepEqual(edge, GREEN, `the box ${now.box} is drawn in green`);
          seen.add('cat');
        } else if (now.detection === 'not_detected') {
          assert.equal(now.box, '', 'no box without a cat');
          seen.add('none');
        }
        return seen.size === 2 ? now : null;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    const counts = await showing();
    assert.ok(counts.analysed >= 2, `frames analysed are counted: ${JSON.stringify(counts)}`);
    const rates = await page.locator('#live dd[data-fact="frames a second"]').textContent();
    assert.match(rates ?? '', /\d+ analysed, \d+ skipped/);
    const classifier = await page.locator('#live dd[data-fact="classifier"]').textContent();
    assert.match(classifier ?? '', /untrained reference/);
    await page.click('#live-stop');
    await page.locator('#live-status', { hasText: 'stopped' }).waitFor();
  });

  test('a dropped photo says so too, beside its comfort line', async () => {
    const bytes = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
    const transfer = await page.evaluateHandle((b64) => {
      const dt = new DataTransfer();
      dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], 'chelsea.png', { type: 'image/png' }));
      return dt;
    }, bytes);
    await page.dispatchEvent('#drop', 'drop', { dataTransfer: transfer });
    const card = page.locator('li.card[data-state="answered"]').first();
    await card.waitFor();
    assert.match((await card.locator('dd[data-fact="classifier"]').textContent()) ?? '', /untrained reference/);
    assert.deepEqual(outside, [], 'nothing was asked of another host');
  });
});
