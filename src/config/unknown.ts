// Unknown CATCOMFORT_* variables (a misspelt name is otherwise silently ignored): each is
// reported with the known name closest to it by edit distance.
import { KNOWN_VARIABLES } from './settings';

export interface UnknownVariable {
  name: string;
  closest: string;
}

/** Levenshtein distance: insertions, deletions and substitutions, each costing 1. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

export function unknownVariables(env: Record<string, string | undefined>): UnknownVariable[] {
  const known: readonly string[] = KNOWN_VARIABLES;
  return Object.keys(env)
    .filter((name) => name.startsWith('CATCOMFORT_') && !known.includes(name))
    .sort()
    .map((name) => {
      let closest = known[0]!;
      let best = Infinity;
      for (const candidate of known) {
        const distance = editDistance(name, candidate);
        if (distance < best) [closest, best] = [candidate, distance];
      }
      return { name, closest };
    });
}
