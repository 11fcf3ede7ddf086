// The model-and-version choices: first the service's default model as /v2/predict routes it (the
// only one before GET /v2/models has answered), then per listed model "as routed" (the serving
// version, or the canary for its share) and each version that answers when named: serving, canary, shadow.
import type { ModelList } from './answer.js';

export interface Choice {
  label: string;
  model: string | null;
  packVersion: string | null;
  /** null: not known (the default model before the list). */
  defaultThreshold: number | null;
}

const ANSWERING = new Set(['serving', 'canary', 'shadow']);

export const DEFAULT_CHOICE: Choice = { label: 'the default model, as routed', model: null, packVersion: null, defaultThreshold: null };

export function choicesOf(list: ModelList): Choice[] {
  return [DEFAULT_CHOICE, ...list.models.flatMap((m) => [
    { label: `${m.id}, as routed`, model: m.id, packVersion: null, defaultThreshold: m.default_threshold },
    ...m.versions
      .filter((v) => ANSWERING.has(v.role))
      .map((v) => ({
        label: `${m.id} ${v.pack_version} (${v.role}${v.role === 'serving' ? '' : ` ${Math.round(v.share * 100)} %`})`,
        model: m.id,
        packVersion: v.pack_version,
        defaultThreshold: m.default_threshold,
      })),
  ])];
}
