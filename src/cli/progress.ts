// A one-line progress bar on a terminal (stderr), redrawn in place.

/** `[#####.....] 12/40 files, 1 error`, shorter than `columns` (just the counts when narrow). */
export function renderBar(done: number, total: number, failed: number, columns: number): string {
  const counts = ` ${String(done).padStart(String(total).length)}/${total} files${failed > 0 ? `, ${failed} error${failed === 1 ? '' : 's'}` : ''}`;
  // Leaves the last column free, so the line never wraps.
  const width = Math.min(40, columns - counts.length - 3);
  if (width < 5) return counts.slice(0, Math.max(0, columns - 1)).trim();
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]${counts}`;
}

export class ProgressBar {
  private done = 0;
  private failed = 0;

  constructor(
    private readonly total: number,
    private readonly stream: NodeJS.WriteStream,
  ) {
    this.draw();
  }

  tick(ok: boolean): void {
    this.done += 1;
    if (!ok) this.failed += 1;
    this.draw();
  }

  /** Clears the bar's line. */
  finish(): void {
    this.stream.write('\r\x1b[K');
  }

  private draw(): void {
    this.stream.write(`\r${renderBar(this.done, this.total, this.failed, this.stream.columns ?? 80)}\x1b[K`);
  }
}
