/** A FIFO semaphore: at most `size` holders; waiters are served in arrival order and may give up while waiting. */
export class Semaphore {
  private held = 0;
  private readonly waiting: Array<{ grant: () => void }> = [];

  constructor(private readonly size: number) {}

  get inUse(): number {
    return this.held;
  }

  /** Resolves with a release function; rejects when `signal` aborts first (the waiter leaves the queue). */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new Error('gave up waiting'));
    if (this.held < this.size) {
      this.held++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          this.held++;
          resolve(this.releaser());
        },
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(new Error('gave up waiting'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.held--;
      this.waiting.shift()?.grant();
    };
  }
}
