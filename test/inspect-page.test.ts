// The inspection page (/inspect) in a real browser: Debian's Chromium driven by playwright-core,
// against the real service on 127.0.0.1 with the real packs and photos. Photos are dropped (a drop
// event carrying the files) or picked; the checks read the page's DOM and its canvas pixels: each
// box is drawn at the answer's coordinates scaled to the shown size, the threshold control changes
// a borderline photo's label, a wrong key, a too-large photo and a file that is not an image get their
// messages, and every request the page makes goes to the service (others are refused and counted).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ffmpegJpeg } from './helpers/phone-jpeg';
import { photo } from './helpers/paths';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (Debian package chromium; .ci/run installs it)`;
const LIMIT = 1024 * 1024;
const GREEN = [0, 200, 83];
const MAGENTA = [213, 0, 249];

interface Photo {
  name: string;
  mimeType: string;
  buffer: Buffer;
}
const shared = (file: string, mimeType: string): Photo => ({ name: file, mimeType, buffer: readFileSync(photo(file)) });
const CAT = shared('000_skimage_chelsea.png', 'image/png');
const DOG = shared('070_darknet_dog.jpg', 'image/jpeg');
const CAT_AND_PERSON = shared('025_oxford_Siamese_153.jpg', 'image/jpeg');

let server: TestServer;
let browser: Browser;
let page: Page;
/** Requests the page tried to send anywhere but the service: refused, and must stay empty. */
const outside: string[] = [];
const answers = new Map<string, any>();

before(async () => {
  if (skip) return;
  server = await startServer({ CATCOMFORT_MAX_BODY_BYTES: String(LIMIT) });
  // launch() gives the browser a fresh temporary profile (its --user-data-dir) and removes it on close.
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 }, deviceScaleFactor: 1 });
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.origin === server.url) return route.continue();
    outside.push(url.href);
    return route.abort();
  });
  page = await context.newPage();
  page.on('response', async (res) => {
    if (!res.url().includes('/predict?') || res.status() !== 200) return;
    const image = JSON.parse(res.request().postData() ?? '{}').image as string;
    answers.set(image.slice(-200), await res.json());
  });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && !m.text().includes('the server responded with a status of') && errors.push(m.text()));
  await page.goto(`${server.url}/inspect`);
  assert.deepEqual(errors, []);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Drops `photos` on the drop zone as a person would: one drop event whose DataTransfer holds the files. */
async function drop(photos: Photo[]): Promise<void> {
  const files = photos.map((p) => ({ name: p.name, type: p.mimeType, base64: p.buffer.toString('base64') }));
  const transfer = await page.evaluateHandle((list) => {
    const dt = new DataTransfer();
    for (const f of list) dt.items.add(new File([Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0))], f.name, { type: f.type }));
    return dt;
  }, files);
  await page.dispatchEvent('#drop', 'drop', { dataTransfer: transfer });
}

function cardOf(p: Photo) {
  return page.locator('li.card').filter({ has: page.locator('h2', { hasText: p.name }) }).first();
}
async function settled(p: Photo, state: 'answered' | 'refused') {
  const c = cardOf(p);
  await c.and(page.locator(`[data-state="${state}"]`)).waitFor();
  return c;
}

/** The answer the page received for `p` (the last one, or the last one `until` holds for), once this process has read it too. */
const answerFor = (p: Photo, until: (answer: any) => boolean = () => true): Promise<any> =>
  waitFor(`the answer to ${p.name}`, () => {
    const answer = answers.get(p.buffer.toString('base64').slice(-200));
    return answer !== undefined && until(answer) ? answer : null;
  }, { timeoutMs: 10_000 });

/** RGB of the card's canvas at (x, y). */
async function pixel(p: Photo, x: number, y: number): Promise<number[]> {
  return cardOf(p)
    .locator('canvas')
    .evaluate((canvas: HTMLCanvasElement, [px, py]) => [...canvas.getContext('2d')!.getImageData(px!, py!, 1, 1).data.slice(0, 3)], [x, y]);
}

/** Shown size of the card's canvas (CSS pixels, equal to its drawing size at scale factor 1). */
async function shown(p: Photo): Promise<{ width: number; height: number }> {
  return cardOf(p)
    .locator('canvas')
    .evaluate((canvas: HTMLCanvasElement) => {
      const r = canvas.getBoundingClientRect();
      return { width: r.width, height: r.height };
    });
}

/** The four edges' middle pixels of `box` (answer pixels) scaled to the shown canvas, each the stroke colour. */
async function assertBoxDrawn(p: Photo, box: any, image: { width: number; height: number }, colour: number[]) {
  const size = await shown(p);
  const scale = size.width / image.width;
  assert.equal(Math.round(image.height * scale), size.height, 'shown at the image aspect');
  const at = (v: number, max: number) => Math.min(Math.floor(v * scale), max - 1);
  const [x0, y0, x1, y1] = [at(box.x_min, size.width), at(box.y_min, size.height), at(box.x_max, size.width), at(box.y_max, size.height)];
  const [mx, my] = [Math.floor((x0 + x1) / 2), Math.floor((y0 + y1) / 2)];
  for (const [x, y] of [[x0, my], [x1, my], [mx, y0], [mx, y1]] as const) assert.deepEqual(await pixel(p, x, y), colour, `${p.name}: (${x}, ${y}) of ${JSON.stringify(box)} x ${scale}`);
}

describe('the inspection page', { skip }, () => {
  test('is served with a strict Content-Security-Policy and the usual security headers', async () => {
    const res = await fetch(`${server.url}/inspect`);
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const rule of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) assert.ok(csp.includes(rule), csp);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
    const html = await res.text();
    assert.doesNotMatch(html, /<script>|\sstyle=|https?:\/\//, 'no inline script or style, no other host');
    const docs = await (await fetch(`${server.url}/v2/docs`)).text();
    assert.match(docs, /<a href="\/inspect">/, 'the docs pages link to it');
  });

  test('a wrong key gets its message, for the model list and for a photo; nothing is kept but in sessionStorage', async () => {
    await page.fill('#key', 'not-the-key-0123456789');
    await page.click('#key-form button[type=submit]');
    await page.locator('#key-state', { hasText: 'Wrong API key' }).waitFor();
    await drop([CAT]);
    const c = await settled(CAT, 'refused');
    assert.match(await c.locator('[role=status]').innerText(), /Wrong API key: the service refused it \(401\)/);
    assert.deepEqual(await page.evaluate(() => [sessionStorage.length, localStorage.length, document.cookie]), [1, 0, '']);
  });

  test('three photos: each verdict as answered, each box at the answer\'s coordinates scaled to the shown size', async () => {
    await page.fill('#key', TEST_KEY);
    await page.click('#key-form button[type=submit]');
    await page.locator('#key-state', { hasText: 'key accepted' }).waitFor();
    await settled(CAT, 'answered'); // the photo refused before is asked again with the new key
    await drop([DOG, CAT_AND_PERSON]);
    for (const p of [CAT, DOG, CAT_AND_PERSON]) {
      const c = await settled(p, 'answered');
      const answer = await answerFor(p);
      assert.equal(await c.getAttribute('data-detection'), answer.detection, p.name);
      assert.equal(await c.locator('[data-fact=detection]').innerText(), answer.detection);
      assert.equal(await c.locator('[data-fact=model]').innerText(), `bc-v1 ${answer.model.pack_version} (service ${answer.model.version})`);
      if (answer.prediction) assert.match(await c.locator('[data-fact=comfort]').innerText(), new RegExp(`^${answer.prediction.label} \\(score ${answer.prediction.score.toFixed(3)}`));
      if (answer.cat) await assertBoxDrawn(p, answer.cat.bounding_box, answer.image, GREEN);
    }
    assert.equal((await answerFor(CAT)).detection, 'detected');
    assert.equal((await answerFor(CAT_AND_PERSON)).detection, 'detected');
    assert.equal((await answerFor(DOG)).detection, 'not_detected');
  });

  test('a large phone photo is shown scaled down, its box scaled with it, and its original bytes sent', async () => {
    const phone: Photo = { name: 'phone-chelsea.jpg', mimeType: 'image/jpeg', buffer: ffmpegJpeg(photo(CAT.name), 'scale=4032:3024') };
    await page.setInputFiles('#files', phone);
    await settled(phone, 'answered');
    const answer = await answerFor(phone);
    assert.deepEqual(answer.image, { width: 4032, height: 3024 });
    assert.equal((await shown(phone)).width, 480);
    await assertBoxDrawn(phone, answer.cat.bounding_box, answer.image, GREEN);
  });

  test('the reasons: the dog\'s rejected candidates listed and drawn in another colour, with why each was not reported', async () => {
    await page.check('#reasons');
    const rows = cardOf(DOG).locator('table.candidates tr[data-outcome="below_low_confidence_cutoff"]');
    const row = rows.first();
    await row.waitFor();
    const explained = await answerFor(DOG, (a) => a.explanation !== undefined);
    assert.equal(await rows.count(), explained.explanation.candidates.length, 'every candidate the detector proposed');
    assert.match(await row.innerText(), /not reported: confidence 0\.\d+ is below the low-confidence cutoff 0\.5/);
    const box = explained.explanation.candidates[0].bounding_box;
    const size = await shown(DOG);
    const scale = size.width / explained.image.width;
    const y = Math.floor(box.y_min * scale);
    const top = await Promise.all(Array.from({ length: 13 }, (_, i) => pixel(DOG, Math.floor(box.x_min * scale) + 2 + i, y)));
    assert.ok(top.some((rgb) => rgb.join() === MAGENTA.join()), JSON.stringify(top));
    assert.match(await cardOf(CAT).locator('table.candidates').innerText(), /chosen/);
  });

  test('the threshold control asks again and shows the borderline photo\'s label change', async () => {
    const before = (await answerFor(CAT)).prediction;
    assert.equal(before.label, 'discomfort');
    assert.ok(before.score > 0.3 && before.score < 0.5, `a borderline score: ${before.score}`);
    await page.uncheck('#default-threshold');
    await page.locator('#threshold').fill('0.5');
    const c = cardOf(CAT);
    await c.and(page.locator('[data-label="comfort"]')).waitFor();
    assert.match(await c.locator('[role=status]').innerText(), /comfort: discomfort \(score [\d.]+, threshold 0\.3\) → comfort \(score [\d.]+, threshold 0\.5\)/);
    assert.equal((await answerFor(CAT, (a) => a.prediction?.threshold === 0.5)).prediction.threshold, 0.5);
  });

  test('a photo over the body limit and a file that is not an image get their messages', async () => {
    const big: Photo = { name: 'noisy-phone.jpg', mimeType: 'image/jpeg', buffer: ffmpegJpeg(photo(CAT.name), 'scale=4032:3024,noise=alls=80:allf=t') };
    assert.ok(big.buffer.length > LIMIT);
    const text: Photo = { name: 'notes.jpg', mimeType: 'image/jpeg', buffer: Buffer.from('not a photo\n') };
    await drop([big, text]);
    const tooLarge = await settled(big, 'refused');
    assert.equal(await tooLarge.getAttribute('data-status'), '413');
    assert.match(await tooLarge.locator('[role=status]').innerText(), /^Too large: this photo is \d+\.\d MB/);
    const notImage = await settled(text, 'refused');
    assert.match(await notImage.locator('[role=status]').innerText(), /Not an image the service can read \(400 invalid_image\): Image could not be decoded\./);
  });

  test('no request left for another host', () => {
    assert.deepEqual(outside, []);
  });
});
