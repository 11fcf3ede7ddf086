// The reasons under a photo (shown on request): each candidate with its detector scores, the
// verifier's reading and why it was or was not chosen, what the verifier checked, and the
// per-stage timings of the Server-Timing header when the service sent one.
import type { Answer, Candidate } from './answer.js';
import type { StageTiming } from './server-timing.js';

const fixed = (n: number, digits = 3) => n.toFixed(digits);

function why(c: Candidate, answer: Answer): string {
  const { cutoffs, verifier } = answer.explanation;
  switch (c.outcome) {
    case 'chosen':
      return 'chosen: the answer\'s cat, classified';
    case 'below_detected_cutoff':
      return `not classified: confidence ${fixed(c.detection_confidence)} is below the detected cutoff ${cutoffs.detected}`;
    case 'below_low_confidence_cutoff':
      return `not reported: confidence ${fixed(c.detection_confidence)} is below the low-confidence cutoff ${cutoffs.low_confidence}`;
    case 'vetoed_lookalike':
      return `vetoed: look-alike mass ${fixed(c.verifier?.lookalike_mass ?? 0)} is above ${verifier?.max_lookalike_mass ?? '?'}`;
    case 'another_chosen':
      return 'passed the verifier, but another candidate was chosen (an earlier one, or one more like a cat than a dog)';
  }
}

function cell(row: HTMLTableRowElement, text: string, className?: string): void {
  const td = row.insertCell();
  if (className) {
    const swatch = document.createElement('span');
    swatch.className = `swatch ${className}`;
    td.append(swatch);
  }
  td.append(text);
}

export function renderReasons(into: HTMLElement, answer: Answer, timings: StageTiming[]): void {
  into.replaceChildren();
  const table = document.createElement('table');
  table.className = 'candidates';
  table.createTHead().insertRow().append(...['box (px)', 'confidence', 'raw score', 'verifier: look-alike / cat / dog', 'outcome'].map((h) => Object.assign(document.createElement('th'), { textContent: h })));
  const body = table.createTBody();
  for (const c of answer.explanation.candidates) {
    const row = body.insertRow();
    row.dataset.outcome = c.outcome;
    const b = c.bounding_box;
    const colour = c.outcome === 'chosen' ? 'chosen' : answer.cat ? 'low' : 'other';
    cell(row, `${b.x_min},${b.y_min} – ${b.x_max},${b.y_max}`, colour);
    cell(row, fixed(c.detection_confidence));
    cell(row, fixed(c.raw_score));
    cell(row, c.verifier ? `${fixed(c.verifier.lookalike_mass)} / ${fixed(c.verifier.cat_mass)} / ${fixed(c.verifier.dog_mass)}` : 'not read');
    cell(row, why(c, answer));
  }
  const notes: string[] = [];
  if (answer.explanation.candidates.length === 0) notes.push('The detector scored no candidate above its floor.');
  const v = answer.explanation.verifier;
  if (v) notes.push(`The verifier read ${v.checked} of them (at most ${v.max_candidates}).`);
  if (timings.length > 0) notes.push(`Server timing: ${timings.map((t) => `${t.description ?? t.name} ${t.ms === null ? '' : `${fixed(t.ms, 1)} ms`}`.trim()).join(', ')}`);
  into.append(table, ...notes.map((n) => Object.assign(document.createElement('p'), { textContent: n })));
}
