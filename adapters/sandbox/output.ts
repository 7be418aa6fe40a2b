/** Combined output of an exec: everything is counted and passed on live, the first `cap` bytes are kept. */
export class OutputCollector {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  bytes = 0;

  constructor(
    private readonly cap: number = 8 * 1024 * 1024,
    private readonly live?: (chunk: Buffer) => void,
  ) {}

  readonly push = (b: Buffer): void => {
    this.bytes += b.length;
    if (this.kept < this.cap) {
      const part = b.subarray(0, this.cap - this.kept);
      this.chunks.push(part);
      this.kept += part.length;
    }
    this.live?.(b);
  };

  get output(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
