// One request's sampler: llama.cpp's default chain, penalties -> logit bias -> top-k -> top-p ->
// min-p -> temperature -> seeded draw, or argmax at temperature 0. Scratch arrays are sized to
// the vocabulary once, so sampling a token allocates nothing.
import { native } from '../native/binding.js';
import { Candidates, ranksBefore } from './candidates.js';
import { dist } from './dist.js';
import { greedy } from './greedy.js';
import { type LogitBiasTable, logitBias } from './logit-bias.js';
import { minP } from './min-p.js';
import { Prng } from './prng.js';
import { penaltiesApply, repetitionPenalties } from './repetition-penalties.js';
import { type ResolvedSamplingOptions, type SamplingOptions, resolveSamplingOptions } from './sampling-options.js';
import { temperature } from './temperature.js';
import { topK } from './top-k.js';
import { topP } from './top-p.js';

const NO_HISTORY: readonly number[] = [];
/**
 * Top-p without top-k takes its nucleus from the best tokens (the addon's selection: the best 64,
 * then 512) when it holds at most this many; a flatter distribution goes through the candidates
 * and top-p's histogram. Qwen2.5's 151,936 tokens, a peaked row: 1.6 -> 0.3 ms; a flat one pays
 * the two selections, about 0.2 ms, on top of its 2.5 ms (a heap of 4096 would cost it 3 ms more).
 */
const NUCLEUS_FROM_THE_TOP = 512;

export class Sampler {
  readonly options: Readonly<ResolvedSamplingOptions>;
  private readonly rng: Prng;
  private working = new Float32Array(0);
  private counts = new Uint32Array(0);
  private candidates = new Candidates(0);
  private biased = new Float32Array(0);

  /** Throws InvalidArgumentError naming the first bad field. */
  constructor(options: SamplingOptions = {}) {
    this.options = resolveSamplingOptions(options);
    this.rng = new Prng(this.options.seed);
  }

  /** The seed in use (the random one when none was given), so a run can be reproduced. */
  get seed(): number {
    return this.options.seed;
  }

  /**
   * Picks the next token from `logits` (not modified). `history` is the token ids so far (prompt
   * and generated, as the caller chooses) that the penalties look back over. With `allowed`
   * (distinct ids, or a bitset over the vocabulary: bit i % 32 of word i >> 5; at least one),
   * the pick is one of them: the chain runs on those tokens alone.
   */
  sample(logits: Float32Array, history: ArrayLike<number> = NO_HISTORY, allowed?: readonly number[] | Uint32Array): number {
    const o = this.options;
    const n = logits.length;
    if (n === 0) throw new RangeError('cannot sample from an empty logit row');
    if (this.working.length !== n) {
      this.working = new Float32Array(n);
      this.counts = new Uint32Array(n);
      this.candidates = new Candidates(n);
    }
    // Greedy with nothing but a bias: no copy of the row (a vocabulary's worth per token).
    if (o.temperature === 0 && allowed === undefined && !penaltiesApply(o, history.length)) return this.greedyBiased(logits, o.logitBias);
    const working = this.working;
    working.set(logits);
    repetitionPenalties(working, history, o, this.counts);
    logitBias(working, o.logitBias);
    const c = this.candidates;
    if (allowed !== undefined) {
      if (allowed instanceof Uint32Array) c.resetToMask(working, allowed);
      else c.resetTo(working, allowed);
      if (o.temperature === 0) return bestOf(c);
    } else {
      // Top-k, top-p and min-p all keep the most likely token, so they cannot change the argmax.
      if (o.temperature === 0) return greedy(working);
      // Nothing narrows the candidates (a request's defaults): the whole row's softmax and the
      // draw in one pass of the addon's over our own copy, as reset, temperature and dist would
      // give them (to float exps: 152k tokens cost 2.6 ms a token in JS, about 0.1 ms there).
      if (o.topK <= 0 && o.topP >= 1 && o.minP <= 0) return native().softmaxDraw(working, o.temperature, this.rng.nextFloat());
      this.candidatesFrom(working);
    }
    topK(c, o.topK);
    topP(c, o.topP);
    minP(c, o.minP);
    temperature(c, o.temperature);
    return dist(c, this.rng);
  }

  /**
   * The candidates from the whole row, the chain's first narrowing sampler taken in the addon's
   * pass over the row where it can be (top-k; top-p from the best tokens; min-p alone); the chain
   * then runs on as before (each of them leaves what it narrowed as it is).
   */
  private candidatesFrom(row: Float32Array): void {
    const o = this.options;
    const c = this.candidates;
    if (o.topK > 0 && o.topK < row.length) return c.resetToTop(row, o.topK);
    if (o.topP < 1) {
      if (c.resetToNucleus(row, o.topP, NUCLEUS_FROM_THE_TOP)) return;
    } else if (o.minP > 0) {
      return c.resetToMinP(row, o.minP);
    }
    c.reset(row);
  }

  /**
   * greedy(logits + bias) with the bias added to `logits` in place and the biased entries put
   * back before returning (or throwing): the caller's row ends as it was, bit for bit.
   */
  private greedyBiased(logits: Float32Array, table: LogitBiasTable): number {
    const ids = table.ids;
    if (ids.length === 0) return greedy(logits);
    if (this.biased.length < ids.length) this.biased = new Float32Array(ids.length);
    const saved = this.biased;
    for (let i = 0; i < ids.length; i++) saved[i] = logits[ids[i]] ?? 0;
    try {
      logitBias(logits, table);
      return greedy(logits);
    } finally {
      for (let i = ids.length - 1; i >= 0; i--) if (ids[i] < logits.length) logits[ids[i]] = saved[i];
    }
  }
}

/** The best live candidate, lowest id on ties (greedy's order). */
function bestOf(c: Candidates): number {
  let best = 0;
  for (let i = 1; i < c.size; i++) if (ranksBefore(c.logits[i], c.ids[i], c.logits[best], c.ids[best])) best = i;
  return c.ids[best];
}
