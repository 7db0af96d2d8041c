// A single-consumer async queue: a producer pushes values (and finally ends or fails it), the
// consumer iterates with `for await`. Bridges generation callbacks to chatStream's iterator.

export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private done = false;
  private error: unknown = undefined;
  private failed = false;
  private wake: (() => void) | null = null;

  push(value: T): void {
    if (this.done) return;
    this.items.push(value);
    this.notify();
  }

  end(): void {
    this.done = true;
    this.notify();
  }

  fail(error: unknown): void {
    if (this.done) return;
    this.error = error;
    this.failed = true;
    this.done = true;
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let next = 0;
    for (;;) {
      while (next < this.items.length) {
        const v = this.items[next]!;
        // Drop consumed values every so often so a long stream does not keep them all.
        if (++next === 1024) {
          this.items.splice(0, next);
          next = 0;
        }
        yield v;
      }
      if (this.done) {
        if (this.failed) throw this.error;
        return;
      }
      await new Promise<void>((resolve) => { this.wake = resolve; });
    }
  }

  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}
