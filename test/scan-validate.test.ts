// Scan submission validation: the metadata limits docs/scan.md states.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateSubmission } from '../src/scan/validate';
import { ApiError } from '../src/errors';
import { METADATA_LIMITS } from '../src/scan/schemas';

const image = 'aGVsbG8=';

function refusal(metadata: unknown): string | null {
  try {
    validateSubmission({ image, metadata });
    return null;
  } catch (error) {
    assert.ok(error instanceof ApiError);
    return JSON.stringify(error.details);
  }
}

test('metadata may nest exactly as deep as docs/scan.md says, and no deeper', () => {
  assert.equal(METADATA_LIMITS.maxDepth, 4);
  assert.equal(refusal({ a: { b: { c: { d: 1 } } } }), null, 'four levels of objects');
  assert.equal(refusal({ a: [[{ d: 'x' }]] }), null, 'four levels mixing arrays and objects');
  assert.equal(refusal({ tags: ['a', 'b'], petId: 'p1' }), null);
  assert.match(refusal({ a: { b: { c: { d: { e: 1 } } } } }) ?? '', /at most 4 levels/);
  assert.match(refusal({ a: [[[{ e: 1 }]]] }) ?? '', /at most 4 levels/);
  assert.match(refusal({ a: { b: { c: { d: [] } } } }) ?? '', /at most 4 levels/, 'an empty container is a level too');
});
