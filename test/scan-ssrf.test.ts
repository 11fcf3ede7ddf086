// The SSRF matrix through the scan interface: every hostile imageUrl is accepted as a scan and
// then refused with a clear, stable error on the scan (the fetcher's own tests in ssrf.test.ts
// add resolver, redirect, size, timeout and content-type cases with local servers).
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { postJson } from './helpers/http';
import { createCredential, scanHeaders, storeEnv, waitForScan, type Credential } from './helpers/scan';
import { startServer, type TestServer } from './helpers/server';

const blocked = [
  'http://127.0.0.1/cat.jpg', 'http://127.255.255.254/', 'http://0.0.0.0/', 'http://10.0.0.1/', 'http://10.255.255.255/',
  'http://172.16.0.1/', 'http://172.31.255.255/', 'http://192.168.1.1/', 'http://169.254.169.254/latest/meta-data/',
  'http://100.64.0.1/', 'http://100.127.255.255/', 'http://192.0.0.8/', 'http://192.0.2.1/', 'http://198.18.0.1/',
  'http://198.51.100.7/', 'http://203.0.113.9/', 'http://224.0.0.1/', 'http://239.255.255.250/', 'http://240.0.0.1/',
  'http://255.255.255.255/', 'http://2130706433/', 'http://0x7f.1/', 'http://0177.0.0.1/', 'http://127.1/',
  'http://3232235521/', 'http://[::1]/', 'http://[::]/', 'http://[fe80::1]/', 'http://[fc00::1]/', 'http://[fd12:3456::1]/',
  'http://[ff02::1]/', 'http://[::ffff:127.0.0.1]/', 'http://[::ffff:a9fe:a9fe]/', 'http://[::127.0.0.1]/',
  'http://[64:ff9b::a00:1]/', 'http://[2002:c0a8:101::1]/', 'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/',
  'http://[2001:db8::1]/', 'https://[::ffff:10.0.0.1]:8443/cat.png', 'http://localhost/cat.jpg',
];
const badUrls: Array<[string, RegExp]> = [
  ['ftp://example.com/cat.jpg', /only http and https/i],
  ['file:///etc/passwd', /only http and https/i],
  ['gopher://127.0.0.1:70/', /only http and https/i],
  ['javascript:alert(1)', /only http and https/i],
  ['http://user:pass@example.com/cat.jpg', /must not contain credentials/i],
  ['not a url', /not a valid absolute URL/i],
];

let server: TestServer;
let cred: Credential;
before(async () => {
  const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-ssrf-')), null);
  server = await startServer({ ...env, CATCOMFORT_SCAN_WORKERS: '4' });
  cred = createCredential(env, 'ssrf');
});
after(() => server.stop());

test(`${badUrls.length} URLs with a bad scheme, credentials or syntax are refused at submission (422)`, async () => {
  for (const [url, message] of badUrls) {
    const res = await postJson(`${server.url}/scan`, { imageUrl: url }, scanHeaders(cred), null);
    assert.equal(res.status, 422, url);
    assert.equal(res.body.error.code, 'invalid_request');
    assert.equal(res.body.error.details.errors[0].field, 'imageUrl');
    assert.match(res.body.error.details.errors[0].message, message);
  }
});

test(`${blocked.length} URLs to blocked addresses: each scan FAILS with fetch_address_blocked`, async () => {
  const submitted = await Promise.all(
    blocked.map(async (url) => {
      const code = 'fetch_address_blocked';
      const res = await postJson(`${server.url}/scan`, { imageUrl: url }, scanHeaders(cred), null);
      assert.equal(res.status, 202, `${url}: ${res.text}`);
      return { url, code, id: res.body.scanId as string };
    }),
  );
  for (const { url, code, id } of submitted) {
    const scan = await waitForScan(server.url, id, cred);
    assert.equal(scan.status, 'FAILED', url);
    assert.equal(scan.error.code, code, url);
    assert.ok(scan.error.message.length > 10, url);
    assert.equal(scan.predictions, null);
  }
});
