// Draws a photo's preview and the answer's boxes on its canvas. The canvas is shown at the answer's
// image size scaled to at most SHOWN_MAX_WIDTH, and every box is the answer's pixel coordinates times
// that scale: the chosen cat in green (orange when only low_confidence) and, with the reasons shown,
// the explanation's other candidates in magenta, dashed.
import type { Answer, Box } from './answer.js';
import { SHOWN_MAX_WIDTH } from './photo.js';

export const COLOURS = { chosen: '#00c853', low: '#ff9100', other: '#d500f9' } as const;
const LINE_WIDTH = 3;

/** Shown size for an image of width x height. */
export function shownSize(width: number, height: number): { width: number; height: number; scale: number } {
  const scale = Math.min(1, SHOWN_MAX_WIDTH / width);
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)), scale };
}

function strokeBox(g: CanvasRenderingContext2D, box: Box, scale: number, colour: string, dashed: boolean): void {
  g.strokeStyle = colour;
  g.lineWidth = LINE_WIDTH;
  g.setLineDash(dashed ? [8, 5] : []);
  g.strokeRect(box.x_min * scale, box.y_min * scale, (box.x_max - box.x_min) * scale, (box.y_max - box.y_min) * scale);
}

/** The preview alone (before an answer), at its own size. */
export function drawPreview(canvas: HTMLCanvasElement, preview: ImageBitmap | null): void {
  const size = shownSize(preview?.width ?? SHOWN_MAX_WIDTH, preview?.height ?? SHOWN_MAX_WIDTH * 0.75);
  paint(canvas, preview, size);
}

function paint(canvas: HTMLCanvasElement, preview: ImageBitmap | null, size: { width: number; height: number }): CanvasRenderingContext2D {
  canvas.width = size.width;
  canvas.height = size.height;
  const g = canvas.getContext('2d')!;
  g.fillStyle = '#e8e8e8';
  g.fillRect(0, 0, size.width, size.height);
  if (preview) g.drawImage(preview, 0, 0, size.width, size.height);
  return g;
}

/** The preview scaled to the answer's image, its other candidates (with the reasons shown), then its cat on top. */
export function drawAnswer(canvas: HTMLCanvasElement, preview: ImageBitmap | null, answer: Answer, reasons: boolean): void {
  const size = shownSize(answer.image.width, answer.image.height);
  const g = paint(canvas, preview, size);
  for (const c of reasons ? answer.explanation.candidates : []) {
    if (c.outcome !== 'chosen' && !(answer.cat && sameBox(c.bounding_box, answer.cat.bounding_box))) strokeBox(g, c.bounding_box, size.scale, COLOURS.other, true);
  }
  if (answer.cat) strokeBox(g, answer.cat.bounding_box, size.scale, answer.detection === 'detected' ? COLOURS.chosen : COLOURS.low, false);
}

function sameBox(a: Box, b: Box): boolean {
  return a.x_min === b.x_min && a.y_min === b.y_min && a.x_max === b.x_max && a.y_max === b.y_max;
}
