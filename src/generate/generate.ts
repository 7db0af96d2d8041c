// One request's token loop: prefix reuse -> prefill -> decode -> sample -> detokenize -> stop
// strings -> text events. Everything the request needs is passed in; the caller owns the slot.
import type { Scheduler } from '../runtime/scheduler.js';
import { commonPrefixLength, type Slot } from '../runtime/slot-pool.js';
import { Sampler } from '../sampling/sampler.js';
import { logprobsAt, MAX_TOP_LOGPROBS, type IdLogprob, type LogprobsAt } from '../sampling/token-logprobs.js';
import { InvalidArgumentError } from '../errors.js';
import type { SamplingOptions } from '../sampling/sampling-options.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { ContextLengthExceededError } from './errors.js';
import { StopDetector } from './stop-detector.js';

export type FinishReason = 'stop' | 'length' | 'abort';

export interface GenerationModel {
  /** The model's forward loop: this generation's steps are batched with every other sequence's. */
  readonly steps: Scheduler;
  readonly tokenizer: Tokenizer;
  readonly contextSize: number;
}

export interface GenerateRequest {
  prompt: number[];
  maxTokens: number;
  sampling: SamplingOptions;
  stop: string[];
  signal?: AbortSignal;
  /** Called once the prompt is evaluated, before the first token is sampled. */
  onStart?: (start: PromptUsage) => void;
  /** Called with each piece of visible text as soon as it is final. */
  onText?: (text: string) => void;
  /**
   * Report each generated token's log-probability and this many most likely alternatives
   * (0 to MAX_TOP_LOGPROBS), from the model's raw distribution; nothing is computed when absent.
   */
  logprobs?: number;
  /** With `logprobs`: called with each generated token's entry, before its text. */
  onLogprob?: (entry: TokenLogprob) => void;
  /** Called with each sampled token id (before detokenizing), for tests and replay recording. */
  onToken?: (id: number) => void;
  /**
   * Tests and benchmarks: the first tokens to "sample", in order, instead of asking the sampler
   * (or the constraint); the forward pass, KV cache and everything downstream run as usual.
   */
  forcedTokens?: readonly number[];
  /** Limits which tokens may come next (a tool choice that requires a call); see DecodeConstraint. */
  constraint?: DecodeConstraint;
  /**
   * Chat: what the next prompt holds after this reply when the reply ends on an end-of-generation
   * token, that token first (the template's end of the turn); asked only when the reply ends on
   * one. If it starts with the token the reply ended on, these tokens are evaluated into the
   * slot's cache, so the next turn's prompt is reused up to its new messages.
   */
  endOfTurn?: () => readonly number[] | null;
}

/**
 * Steers decoding. Asked before each token which ids may come next: null, any (the sampler
 * decides); else a bitset over the vocabulary (bit i % 32 of word i >> 5 set when token i may
 * come; read before the next accept()): one bit, that token is emitted without sampling; several,
 * the sampler picks among them. Every emitted token then goes through the detokenizer, the KV
 * cache and the text stages as a sampled one does, and accept() is told it with the text it
 * decoded to ('' while a UTF-8 character is incomplete). Tokens it did not allow (forcedTokens)
 * are told too. prepare(), when present, is called while the next forward step runs on its
 * worker thread: the time to compute the next allowed() so that it costs nothing after the step.
 */
export interface DecodeConstraint {
  allowed(): Uint32Array | null;
  accept(id: number, text: string): void;
  prepare?(): void;
}

/** A token as `logprobs` reports it. */
export interface TokenLogprobAlternative {
  id: number;
  /** The token's text; one holding part of a UTF-8 character reads as U+FFFD (see bytes). */
  token: string;
  bytes: number[];
  logprob: number;
}

/** One generated token's log-probability and the most likely tokens at its position. */
export interface TokenLogprob extends TokenLogprobAlternative {
  /** Best first. */
  top: TokenLogprobAlternative[];
}

/** The prompt's size and how much of it the slot's cache held. */
export interface PromptUsage {
  promptTokens: number;
  cachedTokens: number;
}

export interface Usage extends PromptUsage {
  completionTokens: number;
}

export interface Timings {
  prefillTokens: number;
  prefillMs: number;
  decodeTokens: number;
  decodeMs: number;
}

export interface GenerateResult {
  text: string;
  tokens: number[];
  finishReason: FinishReason;
  /** The stop string that ended generation; null when none did. */
  stopSequence: string | null;
  /** With `logprobs`: one entry per generated token. */
  logprobs?: TokenLogprob[];
  usage: Usage;
  timings: Timings;
}

export async function generate(model: GenerationModel, slot: Slot, req: GenerateRequest): Promise<GenerateResult> {
  const { steps, tokenizer, contextSize } = model;
  const prompt = req.prompt;
  if (prompt.length === 0) throw new ContextLengthExceededError(0, contextSize);
  if (prompt.length > contextSize) throw new ContextLengthExceededError(prompt.length, contextSize);
  const top = req.logprobs;
  if (top !== undefined && (!Number.isInteger(top) || top < 0 || top > MAX_TOP_LOGPROBS)) {
    throw new InvalidArgumentError(`logprobs must be an integer in [0, ${MAX_TOP_LOGPROBS}] (the alternatives per token), got ${top}`, 'logprobs');
  }
  const sampler = new Sampler(req.sampling);
  const stops = new StopDetector(req.stop);
  const decoder = tokenizer.createDecoder();
  const logits = new Float32Array(steps.outputWidth);

  // Reuse the slot's cached prefix; the last prompt token is always evaluated for its logits.
  const own = Math.min(commonPrefixLength(slot.tokens, prompt), prompt.length - 1);
  slot.tokens.length = own;

  const t0 = performance.now();
  const prefill = await steps.run({ slot, tokens: prompt.slice(own), start: own, out: logits, sharePrefix: true, ...(req.signal ? { signal: req.signal } : {}) });
  const cached = own + prefill.copied;
  const prefillMs = performance.now() - t0;
  if (prefill.aborted) {
    return {
      text: '', tokens: [], finishReason: 'abort', stopSequence: null, ...(top !== undefined ? { logprobs: [] } : {}),
      usage: { promptTokens: prompt.length, completionTokens: 0, cachedTokens: cached },
      timings: { prefillTokens: prompt.length - cached, prefillMs, decodeTokens: 0, decodeMs: 0 },
    };
  }
  req.onStart?.({ promptTokens: prompt.length, cachedTokens: cached });

  const generated: number[] = [];
  const logprobs: TokenLogprob[] = [];
  const history = prompt.slice();
  let text = '';
  let finishReason: FinishReason = 'length';
  const emit = (piece: string) => {
    if (piece.length === 0) return;
    text += piece;
    req.onText?.(piece);
  };
  const t1 = performance.now();
  let decodeSteps = 0;
  let stoppedByString = false;
  let endedOn = -1;
  while (generated.length < req.maxTokens) {
    if (req.signal?.aborted) {
      finishReason = 'abort';
      break;
    }
    const id = req.forcedTokens?.[generated.length] ?? pick(sampler, logits, history, req.constraint);
    req.onToken?.(id);
    if (tokenizer.isEog(id)) {
      finishReason = 'stop';
      endedOn = id;
      break;
    }
    generated.push(id);
    history.push(id);
    if (top !== undefined) {
      const entry = tokenLogprob(tokenizer, logprobsAt(logits, id, top));
      logprobs.push(entry);
      req.onLogprob?.(entry);
    }
    const piece = decoder.push(id);
    req.constraint?.accept(id, piece);
    const out = stops.push(piece);
    emit(out.text);
    if (out.stopped) {
      finishReason = 'stop';
      stoppedByString = true;
      break;
    }
    if (generated.length >= req.maxTokens) break;
    if (prompt.length + generated.length >= contextSize) break; // the context is full
    const constraint = req.constraint;
    const next = await steps.run({
      slot, tokens: [id], start: prompt.length + generated.length - 1, out: logits,
      ...(req.signal ? { signal: req.signal } : {}), ...(constraint?.prepare ? { whileRunning: () => constraint.prepare!() } : {}),
    });
    if (next.aborted) {
      finishReason = 'abort';
      break;
    }
    decodeSteps++;
  }
  if (!stoppedByString) {
    const tail = stops.push(decoder.flush());
    if (tail.stopped) finishReason = 'stop';
    emit(tail.stopped ? tail.text : tail.text + stops.finish());
  }
  const decodeMs = performance.now() - t1;
  // The reply is complete; one more step caches its end of turn (outside the decode timings).
  const end = endedOn >= 0 ? req.endOfTurn?.() : null;
  const at = prompt.length + generated.length;
  if (end && end[0] === endedOn && at + end.length <= contextSize) await steps.run({ slot, tokens: end.slice(), start: at });

  return {
    text,
    tokens: generated,
    finishReason,
    stopSequence: stops.matched,
    ...(top !== undefined ? { logprobs } : {}),
    usage: { promptTokens: prompt.length, completionTokens: generated.length, cachedTokens: cached },
    timings: { prefillTokens: prompt.length - cached, prefillMs, decodeTokens: decodeSteps, decodeMs },
  };
}

function pick(sampler: Sampler, logits: Float32Array, history: number[], constraint: DecodeConstraint | undefined): number {
  const allowed = constraint?.allowed() ?? null;
  if (allowed === null) return sampler.sample(logits, history);
  const only = onlyToken(allowed);
  return only >= 0 ? only : sampler.sample(logits, history, allowed);
}

/** The one token a mask allows, or -1 when it allows none or several. */
function onlyToken(mask: Uint32Array): number {
  let found = -1;
  for (let w = 0; w < mask.length; w++) {
    const bits = mask[w]!;
    if (bits === 0) continue;
    if (found >= 0 || (bits & (bits - 1)) !== 0) return -1;
    found = (w << 5) | (31 - Math.clz32(bits));
  }
  return found;
}

function tokenLogprob(tokenizer: Tokenizer, at: LogprobsAt): TokenLogprob {
  const alternative = ({ id, logprob }: IdLogprob): TokenLogprobAlternative =>
    ({ id, token: tokenizer.tokenToPiece(id), bytes: Array.from(tokenizer.pieceBytes(id)), logprob });
  return { ...alternative(at), top: at.top.map(alternative) };
}
