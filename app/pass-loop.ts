/**
 * Runs a worker's pass on demand, one at a time: a poke while a pass runs asks for one more pass after it, however
 * many pokes came meanwhile. Workers poke on nudges and on a timer; nothing runs twice at once.
 */
export class PassLoop {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  poke(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch(this.onError)
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.poke();
        }
      });
  }

  /** No pass starts after this; resolves when the current one has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}
