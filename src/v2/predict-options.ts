// The v2 predict operations' opt-in query parameters: `explain=true` adds `explanation` to the
// answer, `pack_version` names the loaded version that answers. Without them answers are as before.
import { validationError } from '../errors';
import { queryParam } from '../http/query';

export interface PredictOptions {
  explain: boolean;
  /** A loaded version of the model (serving, canary or shadow); undefined: drawn as usual. */
  packVersion: string | undefined;
}

/** A request without opt-ins. */
export const NO_OPT_IN: PredictOptions = { explain: false, packVersion: undefined };

export function predictOptions(query: string): PredictOptions {
  const explain = queryParam(query, 'explain');
  if (explain !== null && explain !== 'true' && explain !== 'false') throw validationError([{ field: 'explain', message: 'Input should be a valid boolean' }]);
  const packVersion = queryParam(query, 'pack_version');
  if (packVersion === '') throw validationError([{ field: 'pack_version', message: 'String should have at least 1 character' }]);
  return { explain: explain === 'true', packVersion: packVersion ?? undefined };
}
