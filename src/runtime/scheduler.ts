// The forward loop of one loaded model (continuous batching). Sequences hand it the tokens they
// need evaluated (a decode token, or a prompt still to prefill) and await the result; each step
// it takes one decode token from every sequence that has one, fills the rest of the step's token
// budget with prefill chunks in arrival order, and runs ONE forwardBatch over the mix. A long
// prompt is split across steps, so it delays the running sequences by at most one budget-sized
// step at a time. A request whose sequence was aborted leaves before the next step.
//
// The sequences are async functions (see generate.ts): after a step, each one's continuation
// (sampling, detokenizing, stop strings, events) runs in the microtasks that follow, and hands in
// its next token before the next step is assembled on the next turn of the event loop.
import type { BatchStep, CompiledGraph } from '../backend/backend.js';
import { commonPrefixLength, type Slot } from './slot-pool.js';

export interface StepRequest {
  slot: Slot;
  /** Tokens to evaluate at positions start, start + 1, ... in the slot. */
  tokens: readonly number[];
  start: number;
  /** Where the logits of the last token go (outputWidth values); absent: none are wanted. */
  out?: Float32Array;
  signal?: AbortSignal;
  /**
   * A prompt: before its first chunk runs, a longer prefix of it cached in another slot is copied
   * into this slot instead of being prefilled.
   */
  sharePrefix?: boolean;
  /** Called once the step that evaluates the last token has started (work to overlap with it). */
  whileRunning?: () => void;
}

export interface StepOutcome {
  /** Leading tokens of the request copied from another slot's cache instead of evaluated (sharePrefix). */
  copied: number;
  /** The request's signal aborted before all its tokens were evaluated. */
  aborted: boolean;
}

/** One step as the step log reports it. */
export interface StepLogEntry {
  /** Per row group: the slot, its first position and row count, and whether it was a decode token. */
  rows: Array<{ slot: number; start: number; count: number; decode: boolean }>;
  tokens: number;
}

interface Pending {
  req: StepRequest;
  /** Next token of req.tokens to evaluate. */
  next: number;
  copied: number;
  resolve(o: StepOutcome): void;
  reject(e: unknown): void;
}

/** Gauges the server's /metrics reads. */
export interface SchedulerStats {
  /** Sequences with tokens waiting to be evaluated (prefill or decode). */
  pending: number;
  /** Tokens of the last step. */
  lastStepTokens: number;
  steps: number;
}

export class Scheduler {
  private readonly queue: Pending[] = [];
  private readonly exclusive: Array<() => Promise<void>> = [];
  private running = false;
  private scheduled = false;
  private out = new Float32Array(0);
  /** Test hook: each step's rows. */
  onStep: ((entry: StepLogEntry) => void) | null = null;
  readonly stats: SchedulerStats = { pending: 0, lastStepTokens: 0, steps: 0 };

  constructor(
    private readonly graph: CompiledGraph,
    /** Most tokens per step (the backend's maxBatch). */
    readonly budget: number,
    /** Every slot, for prefix sharing. */
    private readonly slots: readonly Slot[],
  ) {}

  /** Width of one logits row. */
  get outputWidth(): number {
    return this.graph.outputWidth;
  }

  /** Evaluates req.tokens into the slot over as many steps as the budget needs. */
  run(req: StepRequest): Promise<StepOutcome> {
    return new Promise<StepOutcome>((resolve, reject) => {
      this.queue.push({ req, next: 0, copied: 0, resolve, reject });
      this.stats.pending = this.queue.length;
      this.wake();
    });
  }

  /** Runs `work` between two steps, with no step in flight (a teacher-forcing pass, a cache copy). */
  runExclusive<T>(work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.exclusive.push(() => work().then(resolve, reject));
      this.wake();
    });
  }

  private wake(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    // On the next turn: the other sequences' continuations of the last step hand in their tokens first.
    setImmediate(() => {
      this.scheduled = false;
      void this.loop();
    });
  }

  private async loop(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0 || this.exclusive.length > 0) {
        while (this.exclusive.length > 0) await this.exclusive.shift()!();
        await this.step();
        // Let the sequences whose tokens were just evaluated hand in their next ones.
        await new Promise<void>((r) => setImmediate(r));
      }
    } finally {
      this.running = false;
      this.stats.pending = this.queue.length;
    }
  }

  private async step(): Promise<void> {
    this.dropAborted();
    if (this.queue.length === 0) return;
    // Decode tokens first (a prompt's last token counts as one: it is a single row too), then
    // prefill chunks in arrival order, up to the budget.
    const decode = this.queue.filter((p) => p.req.tokens.length - p.next === 1);
    const prefill = this.queue.filter((p) => p.req.tokens.length - p.next > 1);
    const taken: Array<{ p: Pending; count: number }> = [];
    let used = 0;
    for (const p of decode) {
      if (used >= this.budget) break;
      taken.push({ p, count: 1 });
      used++;
    }
    for (const p of prefill) {
      if (used >= this.budget) break;
      if (p.next === 0) this.sharePrefix(p);
      const left = p.req.tokens.length - p.next;
      const count = Math.min(left, this.budget - used);
      taken.push({ p, count });
      used += count;
    }

    const tokens = new Int32Array(used);
    const positions = new Int32Array(used);
    const slots = new Int32Array(used);
    const outputs: number[] = [];
    let row = 0;
    for (const { p, count } of taken) {
      const { req } = p;
      // If the step fails, the cache beyond this point is unknown.
      req.slot.tokens.length = req.start + p.next;
      for (let i = 0; i < count; i++, row++) {
        tokens[row] = req.tokens[p.next + i]!;
        positions[row] = req.start + p.next + i;
        slots[row] = req.slot.index;
      }
      if (p.next + count === req.tokens.length && req.out !== undefined) outputs.push(row - 1);
    }
    const width = this.graph.outputWidth;
    // One sequence decoding alone: its logits go straight into its own buffer, not through ours
    // (a copy of the vocabulary's row per token: 600 KB for Qwen2.5's).
    const sole = outputs.length === 1 ? taken.find(({ p, count }) => p.next + count === p.req.tokens.length && p.req.out !== undefined) : undefined;
    const direct = sole !== undefined && sole.p.req.out!.length === width ? sole.p.req.out! : null;
    if (direct === null && this.out.length < outputs.length * width) this.out = new Float32Array(outputs.length * width);
    const step: BatchStep = { tokens, positions, slots, outputs: Int32Array.from(outputs) };
    this.onStep?.({
      rows: taken.map(({ p, count }) => ({ slot: p.req.slot.index, start: p.req.start + p.next, count, decode: p.req.tokens.length - p.next === 1 })),
      tokens: used,
    });
    this.stats.lastStepTokens = used;
    this.stats.steps++;

    const forward = this.graph.forwardBatch(step, direct ?? this.out);
    for (const { p, count } of taken) if (p.next + count === p.req.tokens.length) p.req.whileRunning?.();
    try {
      await forward;
    } catch (err) {
      for (const { p } of taken) this.settle(p, err);
      return;
    }
    let j = 0;
    for (const { p, count } of taken) {
      const { req } = p;
      for (let i = 0; i < count; i++) req.slot.tokens.push(req.tokens[p.next + i]!);
      p.next += count;
      if (p.next < req.tokens.length) continue;
      if (req.out !== undefined && req.out !== direct) req.out.set(this.out.subarray(j * width, ++j * width));
      this.settle(p);
    }
  }

  /** Resolves (or with `err`, rejects) a request and takes it off the queue. */
  private settle(p: Pending, err?: unknown): void {
    const i = this.queue.indexOf(p);
    if (i >= 0) this.queue.splice(i, 1);
    this.stats.pending = this.queue.length;
    if (err !== undefined) p.reject(err);
    else p.resolve({ copied: p.copied, aborted: false });
  }

  private dropAborted(): void {
    for (const p of this.queue.slice()) {
      if (p.req.signal?.aborted !== true) continue;
      this.queue.splice(this.queue.indexOf(p), 1);
      p.resolve({ copied: p.copied, aborted: true });
    }
    this.stats.pending = this.queue.length;
  }

  /**
   * Before a prompt's first chunk: if another slot caches a longer prefix of it than this slot
   * holds (the same system prompt and tools, in another conversation), copy those positions of
   * the KV cache instead of prefilling them. The other slot's positions below its own length are
   * not rewritten while it runs (a slot is only truncated when a new request takes it, between
   * steps), so the copy is consistent.
   */
  private sharePrefix(p: Pending): void {
    const { req } = p;
    if (req.sharePrefix !== true) return;
    const own = req.start;
    const whole = req.slot.tokens.slice(0, own).concat(req.tokens);
    // The last prompt token is always evaluated, for its logits.
    const limit = whole.length - 1;
    let best: Slot | null = null;
    let bestLen = own;
    for (const s of this.slots) {
      if (s === req.slot) continue;
      const len = Math.min(commonPrefixLength(s.tokens, whole), limit);
      if (len > bestLen) {
        best = s;
        bestLen = len;
      }
    }
    if (best === null) return;
    this.graph.copySlot(best.index, req.slot.index, bestLen);
    req.slot.tokens.length = 0;
    for (let i = 0; i < bestLen; i++) req.slot.tokens.push(whole[i]!);
    p.next = bestLen - own;
    p.copied = bestLen - own;
  }
}
