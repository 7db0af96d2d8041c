// Sequence slots: each holds a KV cache and the tokens in it. A request takes the free slot whose
// cached tokens share the longest prefix with its prompt; requests wait in arrival order.

export interface Slot {
  readonly index: number;
  /** Tokens whose keys/values are in this slot's cache, in position order. */
  tokens: number[];
  lastUsed: number;
}

export function commonPrefixLength(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export class SlotPool {
  private readonly slots: Slot[];
  private readonly free: Set<Slot>;
  private readonly waiting: Array<() => void> = [];
  private clock = 0;
  /** Free slots already promised to woken waiters. */
  private handedOff = 0;

  constructor(count: number) {
    this.slots = Array.from({ length: count }, (_, index) => ({ index, tokens: [], lastUsed: 0 }));
    this.free = new Set(this.slots);
  }

  get size(): number {
    return this.slots.length;
  }

  /** Every slot, free or not. */
  get all(): readonly Slot[] {
    return this.slots;
  }

  /** Slots no request holds. */
  get freeCount(): number {
    return this.free.size;
  }

  /** Whether a request arriving now gets a slot without waiting. */
  get hasFree(): boolean {
    return this.free.size - this.handedOff > 0 && this.waiting.length === 0;
  }

  /** Requests waiting for a slot. */
  get queueDepth(): number {
    return this.waiting.length;
  }

  /** Waits for a free slot (FIFO), then takes the one that best matches `prompt`. */
  async acquire(prompt: ArrayLike<number>, signal?: AbortSignal): Promise<Slot> {
    if (signal?.aborted) throw signal.reason ?? new Error('aborted');
    if (this.free.size - this.handedOff === 0 || this.waiting.length > 0) {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          const i = this.waiting.indexOf(wake);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(signal!.reason ?? new Error('aborted'));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        this.waiting.push(wake);
      });
      this.handedOff--;
    }
    let best: Slot | undefined;
    let bestLen = -1;
    for (const slot of this.free) {
      const len = commonPrefixLength(slot.tokens, prompt);
      if (len > bestLen || (len === bestLen && best && slot.lastUsed < best.lastUsed)) {
        best = slot;
        bestLen = len;
      }
    }
    this.free.delete(best!);
    best!.lastUsed = ++this.clock;
    return best!;
  }

  release(slot: Slot): void {
    this.free.add(slot);
    const next = this.waiting.shift();
    if (next) {
      // The slot is promised to the woken waiter, so a newer caller cannot take it first.
      this.handedOff++;
      next();
    }
  }

  /** The slots' cached tokens, for cache diagnostics. */
  cachedTokens(): ReadonlyArray<readonly number[]> {
    return this.slots.map((s) => s.tokens);
  }
}
