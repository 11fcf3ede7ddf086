// Query strings: one parameter's decoded value, as form encoding writes it (`+` is a space).
// v1 reads `threshold` and `api_key` with it, v2 its opt-in parameters.

/** The first value of `name` in `query` (without `?`); null when absent or not decodable. */
export function queryParam(query: string, name: string): string | null {
  if (query === '') return null;
  for (const part of query.split('&')) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    if (key === name) {
      try {
        return decodeURIComponent((eq < 0 ? '' : part.slice(eq + 1)).replace(/\+/g, ' '));
      } catch {
        return null;
      }
    }
  }
  return null;
}
