// The router: matching, 405 lists, error renderers by path prefix or route, and OpenAPI paths from routes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../src/errors';
import { HTTP_STATUS, type Answer } from '../src/http/error-answers';
import { Router } from '../src/http/router';

const renderer = (name: string) => (requestId: string, e: ApiError): Answer => ({ status: HTTP_STATUS[e.kind], headers: {}, body: `${name} ${e.code} ${requestId}` });
const noop = () => undefined;

test('routes match literal and :name segments; another method gives the allowed list', () => {
  const router = new Router(renderer('root')).add('GET', '/a/:id', noop).add('POST', '/a/:id', noop);
  const found = router.match('GET', '/a/x%20y');
  assert.equal(found.kind, 'found');
  assert.deepEqual(found.kind === 'found' && found.params, { id: 'x y' });
  assert.deepEqual(router.match('PUT', '/a/1'), { kind: 'method_not_allowed', allow: ['GET', 'POST'] });
  assert.deepEqual(router.match('GET', '/b'), { kind: 'not_found' });
});

test('errors are rendered by the longest mounted prefix, else the fallback', () => {
  const router = new Router(renderer('root')).mount('/v2', renderer('v2')).mount('/v2/models', renderer('models'));
  const render = (path: string) => router.rendererFor(path)('id-1', new ApiError('not_found')).body;
  assert.equal(render('/v2'), 'v2 not_found id-1');
  assert.equal(render('/v2/predict'), 'v2 not_found id-1');
  assert.equal(render('/v2/models/bc-v1/predict'), 'models not_found id-1');
  assert.equal(render('/v2x'), 'root not_found id-1');
  assert.equal(render('/invocations'), 'root not_found id-1');
});

test('a renderer mounted on a route pattern comes before any prefix, for exactly the paths the pattern matches', () => {
  const router = new Router(renderer('root')).mount('/v2', renderer('v2')).mountRoute('/v2/models/:id/infer', renderer('oip')).mountRoute('/v2', renderer('oip'));
  const render = (path: string) => router.rendererFor(path)('id-1', new ApiError('not_found')).body;
  assert.equal(render('/v2/models/bc-v1/infer'), 'oip not_found id-1');
  assert.equal(render('/v2'), 'oip not_found id-1');
  assert.equal(render('/v2/models/bc-v1/predict'), 'v2 not_found id-1');
  assert.equal(render('/v2/models/bc-v1/infer/more'), 'v2 not_found id-1');
  assert.equal(render('/v2/models'), 'v2 not_found id-1');
});

test('OpenAPI paths come from the routes of one document, with {name} parameters', () => {
  const router = new Router(renderer('root'))
    .add('POST', '/v2/models/:model_id/predict', noop, { document: 'v2', operation: { operationId: 'predict_with_model' } })
    .add('GET', '/v2/models', noop, { document: 'v2', operation: { operationId: 'list_models' } })
    .add('GET', '/v2/docs', noop)
    .add('GET', '/ping', noop, { document: 'v1', operation: { operationId: 'ping' } });
  assert.deepEqual(router.paths('v2'), {
    '/v2/models/{model_id}/predict': { post: { operationId: 'predict_with_model' } },
    '/v2/models': { get: { operationId: 'list_models' } },
  });
  assert.deepEqual(router.paths('v1'), { '/ping': { get: { operationId: 'ping' } } });
  assert.deepEqual(router.paths('scan'), {});
});

test('a remembered match follows the routes: a route or method added later takes the paths matched before it', () => {
  const router = new Router(renderer('root')).add('GET', '/a/:id', noop);
  assert.deepEqual(router.match('GET', '/b/1'), { kind: 'not_found' });
  assert.deepEqual(router.match('POST', '/a/1'), { kind: 'method_not_allowed', allow: ['GET'] });
  const handler = () => undefined;
  router.add('GET', '/b/:n', handler).add('POST', '/a/:id', handler);
  const b = router.match('GET', '/b/1');
  assert.ok(b.kind === 'found' && b.handler === handler && b.params.n === '1');
  assert.ok(router.match('POST', '/a/1').kind === 'found');
  // Many distinct paths (more than are remembered) still each get their own parameters.
  for (let i = 0; i < 2000; i++) {
    const m = router.match('GET', `/a/${i}`);
    assert.ok(m.kind === 'found' && m.params.id === String(i));
  }
  const again = router.match('GET', '/a/7');
  assert.ok(again.kind === 'found' && again.params.id === '7' && Object.isFrozen(again.params));
});
