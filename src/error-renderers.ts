// Each interface's error renderer by name, so a router's outline can cross to the HTTP front's
// threads (front/front-threads.ts) and be rebuilt there with the same renderers.
import { errorResponse, type ErrorRenderer } from './http/error-answers';
import { oipError } from './oip/error-body';
import { renderV1Error } from './v1/errors';

const RENDERERS: Record<string, ErrorRenderer> = { v1: renderV1Error, v2: errorResponse, oip: oipError };

export function rendererNamed(name: string): ErrorRenderer {
  const render = RENDERERS[name];
  if (!render) throw new Error(`no error renderer named ${name}`);
  return render;
}

export function nameOfRenderer(render: ErrorRenderer): string {
  const name = Object.keys(RENDERERS).find((key) => RENDERERS[key] === render);
  if (name === undefined) throw new Error('an error renderer without a name in error-renderers.ts');
  return name;
}
