// Newest frame first, for one live stream: at most one frame waits while another is analysed, and a
// newer one takes its place (the older is skipped). Every frame received ends analysed (answered with
// a result or an error) or skipped (replaced, refused by a full queue, or left waiting at close), so
// received = analysed + skipped once the stream has closed and its last analysis has ended.

/** An analysis's outcome: how to write its answer given the frames skipped since the last one, or null: skipped (a full queue). */
export type FrameOutcome = ((skipped: number) => string) | null;

export class NewestFrame {
  received = 0;
  analysed = 0;
  skipped = 0;
  private waiting: { seq: number; bytes: Buffer; at: number } | null = null;
  private running = false;
  private closed = false;
  private skippedSinceAnswer = 0;
  private idle: (() => void) | null = null;

  constructor(
    /** Analyses frame `seq`, which waited `waitedMs` since it came; never rejects. */
    private readonly analyse: (bytes: Buffer, seq: number, waitedMs: number) => Promise<FrameOutcome>,
    private readonly send: (text: string) => void,
  ) {}

  /** Frame number `received + 1` came: analysed now if none is, else it waits in the place of any older one. */
  frame(bytes: Buffer): void {
    if (this.closed) return;
    this.received++;
    if (this.waiting) this.skip();
    this.waiting = { seq: this.received, bytes, at: performance.now() };
    this.next();
  }

  /** No more frames: one still waiting is skipped; an analysis running still counts when it ends, unanswered. */
  close(): void {
    this.closed = true;
    if (this.waiting) this.skip();
    this.waiting = null;
  }

  /** Resolves once no analysis runs (after close: every frame is counted). */
  settled(): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => (this.idle = resolve));
  }

  private skip(): void {
    this.skipped++;
    this.skippedSinceAnswer++;
  }

  private next(): void {
    if (this.running || !this.waiting) return;
    const { seq, bytes, at } = this.waiting;
    this.waiting = null;
    this.running = true;
    void this.analyse(bytes, seq, performance.now() - at).then((outcome) => {
      this.running = false;
      if (outcome === null) this.skip();
      else {
        this.analysed++;
        const skipped = this.skippedSinceAnswer;
        this.skippedSinceAnswer = 0;
        if (!this.closed) this.send(outcome(skipped));
      }
      this.next();
      if (!this.running) this.idle?.();
    });
  }
}
