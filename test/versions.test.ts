// The versions of one pack id (src/packs/versions.ts): which version answers a request, the limit
// of two loaded at once, and what promote, rollback and remove allow.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Model } from '../src/packs/model';
import { PackVersions, VersionError } from '../src/packs/versions';

const model = (version: string) => ({ id: 'bc-v1', version, manifest: { id: 'bc-v1', version } }) as unknown as Model;

test('a canary answers its share of requests, a shadow none (it runs beside its share), a standby none', () => {
  const pack = new PackVersions(model('1.0.0'));
  const next = model('2.0.0');
  pack.add(next, 'standby', 0);
  assert.deepEqual([0, 0.5, 0.99].map((r) => pack.pick(r)), [0, 0.5, 0.99].map(() => ({ model: pack.current, role: 'serving', shadow: null })));
  pack.route('2.0.0', 'shadow', 1);
  assert.deepEqual([0, 0.5, 0.99].map((r) => [pack.pick(r).model, pack.pick(r).shadow]), [0, 0.5, 0.99].map(() => [pack.current, next]));
  assert.equal(pack.describe(), '1.0.0 serving, 2.0.0 shadow');
  pack.route('2.0.0', 'shadow', 0.25);
  assert.deepEqual([0, 0.24, 0.25, 0.99].map((r) => pack.pick(r).shadow), [next, next, null, null]);
  assert.equal(pack.describe(), '1.0.0 serving, 2.0.0 shadow 25%');
  pack.route('2.0.0', 'canary', 0.1);
  assert.equal(pack.pick(0.05).model, next);
  assert.equal(pack.pick(0.1).model, pack.current);
  assert.equal(pack.pick(0.05).shadow, null);
  assert.equal(pack.describe(), '1.0.0 serving, 2.0.0 canary 10%');
});

test('two versions at most; promote keeps the old one as previous; the serving one cannot be removed', () => {
  const pack = new PackVersions(model('1.0.0'));
  pack.add(model('2.0.0'), 'canary', 0.5);
  assert.throws(() => pack.add(model('3.0.0'), 'standby', 0), (e: Error) => e instanceof VersionError && /already has two versions loaded .*unload bc-v1@2\.0\.0 first/.test(e.message));
  assert.throws(() => pack.add(model('1.0.0'), 'standby', 0), /bc-v1@1\.0\.0 is already loaded/);
  pack.promote('2.0.0');
  assert.equal(pack.describe(), '2.0.0 serving, 1.0.0 previous');
  assert.equal(pack.pick(0).model.version, '2.0.0', 'a previous version answers nothing');
  assert.throws(() => pack.promote('2.0.0'), /bc-v1@2\.0\.0 is the serving version/);
  assert.throws(() => pack.remove('2.0.0'), /is the serving version/);
  assert.throws(() => pack.route('9.9.9', 'shadow', 1), /bc-v1@9\.9\.9 is not loaded \(2\.0\.0 serving, 1\.0\.0 previous\)/);
  pack.promote('1.0.0');
  assert.equal(pack.describe(), '1.0.0 serving, 2.0.0 previous');
  assert.equal(pack.remove('2.0.0').version, '2.0.0');
  assert.equal(pack.describe(), '1.0.0 serving');
  pack.add(model('3.0.0'), 'standby', 0);
  assert.equal(pack.list().length, 2);
});

test('a request addressed to a version: the serving one keeps its shadow, a canary answers whatever its share, other roles never', () => {
  const pack = new PackVersions(model('1.0.0'));
  const next = model('2.0.0');
  pack.add(next, 'shadow', 0.5);
  assert.deepEqual(pack.pickVersion('1.0.0', 0.4), { model: pack.current, role: 'serving', shadow: next });
  assert.deepEqual(pack.pickVersion('1.0.0', 0.6), { model: pack.current, role: 'serving', shadow: null }, 'drawn for its share');
  assert.equal(pack.pickVersion('2.0.0', 0), undefined, 'a shadow answers nothing');
  pack.route('2.0.0', 'canary', 0.01);
  assert.deepEqual(pack.pickVersion('2.0.0', 0.99), { model: next, role: 'canary', shadow: null });
  pack.route('2.0.0', 'standby', 0);
  assert.equal(pack.pickVersion('2.0.0', 0), undefined);
  assert.equal(pack.pickVersion('9.9.9', 0), undefined);
});

test('a version named by v2 pack_version: serving (its shadow drawn as usual), canary, or the shadow answering alone; standby and previous none', () => {
  const pack = new PackVersions(model('1.0.0'));
  const next = model('2.0.0');
  pack.add(next, 'shadow', 1);
  assert.deepEqual(pack.pickNamed('1.0.0', 0), { model: pack.current, role: 'serving', shadow: next });
  assert.deepEqual(pack.pickNamed('2.0.0', 0), { model: next, role: 'shadow', shadow: null });
  assert.equal(pack.pickVersion('2.0.0', 0), undefined);
  pack.route('2.0.0', 'canary', 0.1);
  assert.deepEqual(pack.pickNamed('2.0.0', 0.99), { model: next, role: 'canary', shadow: null });
  pack.route('2.0.0', 'standby', 0);
  assert.equal(pack.pickNamed('2.0.0', 0), undefined);
  pack.promote('2.0.0');
  assert.equal(pack.pickNamed('1.0.0', 0), undefined);
  assert.equal(pack.pickNamed('9.9.9', 0), undefined);
});
