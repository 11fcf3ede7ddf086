// One photo on the page: its canvas, its verdict (detection state, confidence, comfort label and
// score, model and version), what changed since the last ask, a refusal's message (with "Ask again"
// when waiting may help), and the reasons.
// ask() sends the photo again with the current target; the card keeps the photo's bytes and preview.
import type { Answer } from './answer.js';
import { predict, type Target } from './api.js';
import { drawAnswer, drawPreview } from './draw.js';
import { base64Of, previewOf } from './photo.js';
import { renderReasons } from './reasons.js';
import { UNTRAINED } from './live.js';

const fixed = (n: number) => n.toFixed(3);

/** Refusals worth asking again as they are: the service unreachable, busy (429, after its Retry-After), or unavailable. */
const RETRYABLE = new Set([0, 429, 503]);

/** Whether pack `id`'s classifier is a trained head; null: not known (the model list has not answered). */
export type ClassifierTrained = (id: string) => boolean | null;

function verdict(answer: Answer, trained: ClassifierTrained): Array<[string, string]> {
  const p = answer.prediction;
  return [
    ['detection', answer.detection],
    ['confidence', answer.cat ? fixed(answer.cat.detection_confidence) : '–'],
    ['comfort', p ? `${p.label} (score ${fixed(p.score)}, threshold ${p.threshold})` : '–'],
    ...(trained(answer.model.id) === false ? [['classifier', UNTRAINED] as [string, string]] : []),
    ['model', `${answer.model.id} ${answer.model.pack_version} (service ${answer.model.version})`],
    ['image', `${answer.image.width} x ${answer.image.height}`],
  ];
}

export class PhotoCard {
  readonly element = document.createElement('li');
  private readonly canvas = document.createElement('canvas');
  private readonly facts = document.createElement('dl');
  private readonly status = document.createElement('p');
  private readonly reasons = document.createElement('div');
  private readonly retry = Object.assign(document.createElement('button'), { type: 'button', textContent: 'Ask again', hidden: true });
  private preview: ImageBitmap | null = null;
  private readonly image: Promise<string>;
  /** Asks so far; an answer to an older ask than the latest is dropped. */
  private asks = 0;
  private answer: Answer | null = null;

  constructor(
    private readonly file: File,
    private readonly showReasons: () => boolean,
    private readonly trained: ClassifierTrained,
  ) {
    this.element.className = 'card';
    this.element.dataset.state = 'pending';
    this.status.setAttribute('role', 'status');
    this.reasons.className = 'reasons';
    const title = Object.assign(document.createElement('h2'), { textContent: `${file.name} (${(file.size / 1024).toFixed(0)} KB)` });
    this.element.append(title, this.canvas, this.status, this.retry, this.facts, this.reasons);
    this.image = base64Of(file);
    void previewOf(file).then((preview) => {
      this.preview = preview;
      this.redraw();
    });
  }

  async ask(key: string, target: Target): Promise<void> {
    const ask = ++this.asks;
    this.retry.hidden = true;
    this.element.dataset.state = 'asking';
    this.status.className = '';
    this.status.textContent = 'asking…';
    const result = await predict(key, await this.image, this.file.size, target);
    if (ask !== this.asks) return;
    if (!result.ok) {
      this.answer = null;
      this.facts.replaceChildren();
      this.reasons.replaceChildren();
      this.status.className = 'error';
      this.status.textContent = result.refusal.message;
      this.retry.hidden = !RETRYABLE.has(result.refusal.status);
      this.retry.onclick = () => void this.ask(key, target);
      this.element.dataset.state = 'refused';
      this.element.dataset.status = String(result.refusal.status);
      this.redraw();
      return;
    }
    const before = this.answer;
    this.answer = result.value;
    this.status.textContent = before ? `asked again: ${changes(before, result.value, this.trained) || 'nothing changed'}` : '';
    this.showFacts(result.value, before);
    renderReasons(this.reasons, result.value, result.timings);
    Object.assign(this.element.dataset, { state: 'answered', status: '200', detection: result.value.detection, label: result.value.prediction?.label ?? '' });
    this.redraw();
  }

  redraw(): void {
    if (this.answer) drawAnswer(this.canvas, this.preview, this.answer, this.showReasons());
    else drawPreview(this.canvas, this.preview);
  }

  private showFacts(answer: Answer, before: Answer | null): void {
    const old = new Map(before ? verdict(before, this.trained) : []);
    this.facts.replaceChildren(
      ...verdict(answer, this.trained).flatMap(([name, value]) => {
        const dd = Object.assign(document.createElement('dd'), { textContent: value });
        dd.dataset.fact = name;
        if (before && old.get(name) !== value) dd.className = 'changed';
        return [Object.assign(document.createElement('dt'), { textContent: name }), dd];
      }),
    );
  }
}

/** What differs between two answers for the same photo, e.g. `comfort: discomfort → comfort`. */
function changes(before: Answer, after: Answer, trained: ClassifierTrained): string {
  const old = new Map(verdict(before, trained));
  return verdict(after, trained)
    .filter(([name, value]) => name !== 'confidence' && old.get(name) !== value)
    .map(([name, value]) => `${name}: ${old.get(name)} → ${value}`)
    .join('; ');
}
