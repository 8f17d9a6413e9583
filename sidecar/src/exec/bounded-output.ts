// Collects a child's output up to a byte limit; the rest is counted, dropped, and reported by a marker.
export class BoundedOutput {
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  #dropped = 0;
  constructor(readonly limit: number) {}

  push(chunk: Buffer): void {
    const room = this.limit - this.#kept;
    if (room <= 0) {
      this.#dropped += chunk.length;
      return;
    }
    if (chunk.length <= room) {
      this.#chunks.push(chunk);
      this.#kept += chunk.length;
      return;
    }
    this.#chunks.push(chunk.subarray(0, room));
    this.#kept += room;
    this.#dropped += chunk.length - room;
  }

  get truncated(): boolean {
    return this.#dropped > 0;
  }

  /** UTF-8 text (invalid bytes become U+FFFD, so it is always valid JSON), plus the marker if cut. */
  text(): string {
    const body = Buffer.concat(this.#chunks).toString('utf8');
    return this.#dropped > 0 ? `${body}\n[output truncated: ${this.#dropped} more bytes not shown]\n` : body;
  }
}
