// "Live camera": the browser's camera over the live stream (GET /v2/stream, docs/api-v2.md "Live
// stream"). Frames are JPEGs of the video, sent so that two are on their way at most (one analysed,
// one waiting: the service answers the newest and counts the rest skipped), so frames go as fast as
// answers come back. The video is drawn continuously with the latest answer's box, state, comfort
// (and whether the classifier is the untrained reference) and timings, and the frames analysed and
// skipped a second. The section's dataset says what is drawn, for tests and tools.
import type { Box } from './answer.js';
import type { Target } from './api.js';
import { COLOURS } from './draw.js';

interface StreamResult {
  type: 'result';
  seq: number;
  skipped: number;
  detection: 'detected' | 'low_confidence' | 'not_detected';
  prediction: { label: string; score: number; threshold: number } | null;
  cat: { bounding_box: Box; detection_confidence: number } | null;
  image: { width: number; height: number };
  timings: Record<string, number>;
}
type StreamMessage =
  | StreamResult
  | { type: 'settings'; classifier_trained: boolean | null }
  | { type: 'error'; seq: number | null; skipped: number | null; error: { code: string; message: string } };

/** Frames on their way (sent, neither answered nor counted skipped) at most. */
const ON_THEIR_WAY = 2;
/** Without an answer for this long, frames on their way are taken as lost (a full queue skips silently until the next answer). */
const STALL_MS = 1500;
const SHOWN_MAX_WIDTH = 640;
const JPEG_QUALITY = 0.85;
/** Why the service closed a stream, by close code (src/stream/close-codes.ts). */
const CLOSED: Record<number, string> = {
  1000: 'stopped',
  1001: 'the service is shutting down',
  1006: 'the connection was lost (or idle too long)',
  1009: 'a frame was over the body limit',
  4001: 'the service refused the API key',
  4008: 'answers were not read in time',
};

export class LiveCamera {
  private media: MediaStream | null = null;
  private socket: WebSocket | null = null;
  private readonly grab = document.createElement('canvas');
  private latest: StreamResult | null = null;
  private trained: boolean | null = null;
  private sent = 0;
  private settled = 0;
  private lastMessageAt = 0;
  /** When each frame was analysed or skipped, over the last second. */
  private analysedAt: number[] = [];
  private skippedAt: number[] = [];
  private analysed = 0;
  private skipped = 0;
  private drawing = 0;
  /** Starts so far: a start superseded (by stop or another start) while it awaited gives up what it got. */
  private starts = 0;

  constructor(
    private readonly section: HTMLElement,
    private readonly video: HTMLVideoElement,
    private readonly canvas: HTMLCanvasElement,
    private readonly facts: HTMLElement,
    private readonly status: HTMLElement,
    /** Hears the stream end, whoever ended it. */
    private readonly ended: () => void,
  ) {}

  get running(): boolean {
    return this.socket !== null;
  }

  async start(key: string, target: Target): Promise<void> {
    this.stop();
    const start = this.starts;
    this.say('starting the camera…');
    let media: MediaStream;
    try {
      media = await navigator.mediaDevices.getUserMedia({ video: true, audio: false });
    } catch (error) {
      if (start !== this.starts) return;
      this.ended();
      return this.say(`No camera: ${(error as Error).message}`, true);
    }
    if (start !== this.starts) return void media.getTracks().forEach((track) => track.stop());
    this.media = media;
    this.video.srcObject = media;
    await this.video.play();
    if (start !== this.starts) return;
    const socket = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v2/stream`);
    this.socket = socket;
    Object.assign(this, { latest: null, trained: null, sent: 0, settled: 0, analysed: 0, skipped: 0, analysedAt: [], skippedAt: [] });
    socket.onopen = () => {
      const settings = { api_key: key, threshold: target.threshold, ...(target.model ? { model: target.model } : {}), ...(target.packVersion ? { pack_version: target.packVersion } : {}) };
      socket.send(JSON.stringify(settings));
      this.say('connected');
    };
    socket.onmessage = (event) => this.received(JSON.parse(event.data as string) as StreamMessage);
    socket.onclose = (event) => {
      if (this.socket === socket) {
        this.stop();
        this.ended();
      } else if (this.socket !== null) return; // a newer stream's status stays
      this.say(`Live stream ended: ${CLOSED[event.code] ?? `close code ${event.code}`}.`, event.code !== 1000);
    };
    this.drawing = requestAnimationFrame(() => this.draw());
  }

  stop(): void {
    this.starts++;
    const socket = this.socket;
    this.socket = null;
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000);
    for (const track of this.media?.getTracks() ?? []) track.stop();
    this.media = null;
    cancelAnimationFrame(this.drawing);
  }

  private received(message: StreamMessage): void {
    this.lastMessageAt = performance.now();
    if (message.type === 'settings') this.trained = message.classifier_trained;
    else if (message.type === 'error') {
      if (message.seq !== null) this.settled += 1 + (message.skipped ?? 0);
      this.say(`Frame ${message.seq ?? ''} refused: ${message.error.message}`, true);
    } else {
      this.latest = message;
      this.analysed++;
      this.skipped += message.skipped;
      this.settled += 1 + message.skipped;
      const now = performance.now();
      this.analysedAt.push(now);
      for (let i = 0; i < message.skipped; i++) this.skippedAt.push(now);
      this.showFacts(message);
    }
    this.sendFrames();
  }

  /** Sends frames until ON_THEIR_WAY are on their way (after a stall, as if none were). */
  private sendFrames(): void {
    const socket = this.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN || this.video.videoWidth === 0) return;
    if (performance.now() - this.lastMessageAt > STALL_MS) {
      this.settled = this.sent;
      this.lastMessageAt = performance.now();
    }
    while (this.sent - this.settled < ON_THEIR_WAY) {
      this.sent++;
      this.grab.width = this.video.videoWidth;
      this.grab.height = this.video.videoHeight;
      this.grab.getContext('2d')!.drawImage(this.video, 0, 0);
      this.grab.toBlob((blob) => blob && this.socket === socket && socket.send(blob), 'image/jpeg', JPEG_QUALITY);
    }
  }

  private draw(): void {
    const { videoWidth: width, videoHeight: height } = this.video;
    if (width > 0) {
      const scale = Math.min(1, SHOWN_MAX_WIDTH / width);
      this.canvas.width = Math.round(width * scale);
      this.canvas.height = Math.round(height * scale);
      const g = this.canvas.getContext('2d')!;
      g.drawImage(this.video, 0, 0, this.canvas.width, this.canvas.height);
      const box = this.latest?.cat?.bounding_box;
      const boxScale = this.latest ? this.canvas.width / this.latest.image.width : 0;
      if (box) {
        g.strokeStyle = this.latest!.detection === 'detected' ? COLOURS.chosen : COLOURS.low;
        g.lineWidth = 3;
        g.strokeRect(box.x_min * boxScale, box.y_min * boxScale, (box.x_max - box.x_min) * boxScale, (box.y_max - box.y_min) * boxScale);
      }
      const drawn = box ? [box.x_min, box.y_min, box.x_max, box.y_max].map((v) => Math.round(v * boxScale)).join(',') : '';
      Object.assign(this.section.dataset, { detection: this.latest?.detection ?? '', box: drawn, seq: String(this.latest?.seq ?? 0), analysed: String(this.analysed), skipped: String(this.skipped) });
      if (this.socket) this.sendFrames();
    }
    if (this.socket) this.drawing = requestAnimationFrame(() => this.draw());
  }

  private showFacts(result: StreamResult): void {
    const now = performance.now();
    this.analysedAt = this.analysedAt.filter((t) => now - t < 1000);
    this.skippedAt = this.skippedAt.filter((t) => now - t < 1000);
    const p = result.prediction;
    const rows: Array<[string, string]> = [
      ['detection', `${result.detection}${result.cat ? ` (confidence ${result.cat.detection_confidence.toFixed(3)})` : ''}`],
      ['comfort', p ? `${p.label} (score ${p.score.toFixed(3)}, threshold ${p.threshold})` : '–'],
      ...(this.trained === false ? [['classifier', UNTRAINED] as [string, string]] : []),
      ['frames a second', `${this.analysedAt.length} analysed, ${this.skippedAt.length} skipped (in all: ${this.analysed} analysed, ${this.skipped} skipped)`],
      ['timings', `${result.timings.total?.toFixed(1) ?? '–'} ms (${Object.entries(result.timings).filter(([stage]) => stage !== 'total').map(([stage, ms]) => `${stage} ${ms.toFixed(1)}`).join(', ')})`],
    ];
    this.facts.replaceChildren(
      ...rows.flatMap(([name, value]) => {
        const dd = Object.assign(document.createElement('dd'), { textContent: value });
        dd.dataset.fact = name;
        return [Object.assign(document.createElement('dt'), { textContent: name }), dd];
      }),
    );
  }

  private say(text: string, error = false): void {
    this.status.textContent = text;
    this.status.className = error ? 'error' : '';
  }
}

/** What the page says beside the comfort line while the answering pack's classifier is the untrained reference. */
export const UNTRAINED = 'the untrained reference head: its comfort label and score mean nothing until a head is trained on labelled photos (catcomfort train-head)';
