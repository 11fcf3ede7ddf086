// The inspection page's wiring: the key form, the model/version and threshold controls (a change
// asks every photo again and restarts the live camera), the reasons toggle, the live camera
// (live.ts), and the drop zone (one PhotoCard per file, asked at once).
import { listModels, type Target } from './api.js';
import { PhotoCard } from './card.js';
import { LiveCamera } from './live.js';
import { forgetKey, storedKey, storeKey } from './key.js';
import { choicesOf, DEFAULT_CHOICE, type Choice } from './targets.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const keyInput = $<HTMLInputElement>('key');
const keyState = $<HTMLSpanElement>('key-state');
const targetSelect = $<HTMLSelectElement>('target');
const threshold = $<HTMLInputElement>('threshold');
const thresholdValue = $<HTMLOutputElement>('threshold-value');
const useDefault = $<HTMLInputElement>('default-threshold');
const reasons = $<HTMLInputElement>('reasons');
const drop = $<HTMLLabelElement>('drop');
const notice = $<HTMLParagraphElement>('notice');
const cards: PhotoCard[] = [];
let choices: Choice[] = [DEFAULT_CHOICE];
/** Whether each listed pack's classifier is a trained head. */
let trainedHeads = new Map<string, boolean>();
const liveStart = $<HTMLButtonElement>('live-start');
const liveStop = $<HTMLButtonElement>('live-stop');
const live = new LiveCamera($('live'), $<HTMLVideoElement>('live-video'), $<HTMLCanvasElement>('live-canvas'), $('live-facts'), $('live-status'), () => {
  liveStart.disabled = false;
  liveStop.disabled = true;
});

function target(): Target {
  const choice = choices[targetSelect.selectedIndex] ?? DEFAULT_CHOICE;
  return { model: choice.model, packVersion: choice.packVersion, threshold: useDefault.checked ? null : Number(threshold.value) };
}

function askAll(of: PhotoCard[] = cards): void {
  const key = storedKey();
  notice.textContent = key === null ? 'Enter an API key first.' : '';
  if (key !== null) for (const card of of) void card.ask(key, target());
}

function startLive(): void {
  const key = storedKey();
  notice.textContent = key === null ? 'Enter an API key first.' : '';
  if (key === null) return;
  liveStart.disabled = true;
  liveStop.disabled = false;
  void live.start(key, target());
}

function stopLive(): void {
  live.stop();
  liveStart.disabled = false;
  liveStop.disabled = true;
}

/** A new target: every photo asked again, and the live camera restarted with it. */
function retarget(): void {
  askAll();
  if (live.running) startLive();
}

function showChoices(): void {
  targetSelect.replaceChildren(...choices.map((c) => new Option(c.label)));
  showThreshold();
}

async function loadModels(): Promise<void> {
  const key = storedKey();
  keyState.textContent = key === null ? 'no key yet' : 'checking the key…';
  if (key === null) return;
  const result = await listModels(key);
  choices = result.ok ? choicesOf(result.value) : [DEFAULT_CHOICE];
  trainedHeads = new Map(result.ok ? result.value.models.map((m) => [m.id, m.classifier.trained]) : []);
  showChoices();
  keyState.className = result.ok ? '' : 'error';
  keyState.textContent = result.ok ? 'key accepted (kept in this tab only)' : result.refusal.message;
  askAll();
}

function showThreshold(): void {
  threshold.disabled = useDefault.checked;
  const fallback = choices[targetSelect.selectedIndex]?.defaultThreshold;
  if (useDefault.checked && typeof fallback === 'number') threshold.value = String(fallback);
  thresholdValue.textContent = useDefault.checked ? (typeof fallback === 'number' ? fallback.toFixed(2) : '–') : Number(threshold.value).toFixed(2);
}

$<HTMLFormElement>('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  if (keyInput.value.trim() === '') return;
  storeKey(keyInput.value.trim());
  keyInput.value = '';
  showChoices();
void loadModels();
});
$<HTMLButtonElement>('forget-key').addEventListener('click', () => {
  forgetKey();
  keyState.textContent = 'key forgotten';
});
targetSelect.addEventListener('change', () => {
  showThreshold();
  retarget();
});
useDefault.addEventListener('change', () => {
  showThreshold();
  retarget();
});
threshold.addEventListener('input', showThreshold);
threshold.addEventListener('change', () => retarget());
liveStart.addEventListener('click', startLive);
liveStop.addEventListener('click', stopLive);
reasons.addEventListener('change', () => {
  document.body.classList.toggle('show-reasons', reasons.checked);
  for (const card of cards) card.redraw();
});

function addFiles(files: FileList | null): void {
  const trained = (id: string) => trainedHeads.get(id) ?? null;
  const added = [...(files ?? [])].map((file) => new PhotoCard(file, () => reasons.checked, trained));
  $<HTMLOListElement>('photos').prepend(...added.map((c) => c.element).reverse());
  cards.push(...added);
  askAll(added);
}

$<HTMLInputElement>('files').addEventListener('change', (event) => {
  const input = event.target as HTMLInputElement;
  addFiles(input.files);
  input.value = '';
});
drop.addEventListener('dragover', (event) => {
  event.preventDefault();
  drop.classList.add('over');
});
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (event) => {
  event.preventDefault();
  drop.classList.remove('over');
  addFiles(event.dataTransfer?.files ?? null);
});

showChoices();
void loadModels();
