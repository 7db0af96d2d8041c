// Continuous batching through Runtime: concurrent requests share forward steps (the step log
// shows it), yet each gives exactly the token ids it gives alone at temperature 0, whenever it
// arrives; an aborted one leaves the others unchanged and frees its slot; a prompt sharing a long
// prefix with another slot's copies those KV entries; a full queue refuses at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueFullError, Runtime } from '../../src/index.js';
import type { StepLogEntry } from '../../src/runtime/scheduler.js';
import { MODELS } from '../helpers/paths.js';
import { skipReason } from '../gpu/gpu-adapter.js';

const MODEL = `${MODELS}/stories260K.gguf`;
const PROMPTS = [
  'Once upon a time',
  'The little dog ran to the park and saw a big red ball. He wanted to play with it, so he',
  'Lily had a cat',
  'One day, a boy named Tim went to the store with his mom. They wanted to buy some',
];
const MAX_TOKENS = 40;

async function solo(backend: 'cpu' | 'webgpu'): Promise<number[][]> {
  const rt = await Runtime.load({ model: MODEL, backend, threads: 2, slots: 1 });
  try {
    const out: number[][] = [];
    for (const prompt of PROMPTS) out.push((await rt.complete({ prompt, maxTokens: MAX_TOKENS, temperature: 0 })).tokens);
    return out;
  } finally {
    await rt.close();
  }
}

/** Resolves once `fired` has been called `n` times. */
function counter(n: number): { fired: () => void; reached: Promise<void> } {
  let count = 0;
  let done!: () => void;
  const reached = new Promise<void>((r) => (done = r));
  return { fired: () => ++count === n && done(), reached };
}

describe.each([['cpu'], ['webgpu']] as const)('continuous batching on %s', (backend) => {
  const skip = backend === 'webgpu' ? skipReason : null;
  let expected: number[][];
  let rt: Runtime;
  const log: StepLogEntry[] = [];

  beforeAll(async () => {
    if (skip) return;
    expected = await solo(backend);
    // A budget of 16 tokens: the longer prompts are split across steps.
    rt = await Runtime.load({ model: MODEL, backend, threads: 2, slots: 4, maxBatch: 16, onStep: (e) => log.push(e) });
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
  });

  it.skipIf(skip)('four requests started at different moments each give their solo tokens, in shared steps', async () => {
    log.length = 0;
    const aTokens = counter(8);
    const bTokens = counter(3);
    const a = rt.complete({ prompt: PROMPTS[0]!, maxTokens: MAX_TOKENS, temperature: 0, onToken: aTokens.fired });
    // B arrives mid-way through A's decode, C and D while both decode.
    await aTokens.reached;
    const b = rt.complete({ prompt: PROMPTS[1]!, maxTokens: MAX_TOKENS, temperature: 0, onToken: bTokens.fired });
    await bTokens.reached;
    const c = rt.complete({ prompt: PROMPTS[2]!, maxTokens: MAX_TOKENS, temperature: 0 });
    const d = rt.complete({ prompt: PROMPTS[3]!, maxTokens: MAX_TOKENS, temperature: 0 });
    const results = await Promise.all([a, b, c, d]);
    results.forEach((r, i) => expect(r.tokens, `request ${i}`).toEqual(expected[i]));

    // Every step within the budget; steps shared by several sequences; a long prompt split across steps.
    expect(log.every((s) => s.tokens <= 16)).toBe(true);
    expect(log.some((s) => new Set(s.rows.map((r) => r.slot)).size === 4)).toBe(true);
    const prefillSteps = log.filter((s) => s.rows.some((r) => !r.decode && r.count > 1 && r.start > 0));
    expect(prefillSteps.length).toBeGreaterThan(0);
    // A prompt's chunk shares its step with the decode tokens of the sequences already running.
    expect(prefillSteps.some((s) => s.rows.some((r) => r.decode))).toBe(true);
    // No running sequence misses a step: each slot's decode rows come in consecutive steps while it decodes.
    for (let slot = 0; slot < 4; slot++) {
      const at = log.flatMap((s, i) => (s.rows.some((r) => r.slot === slot && r.decode) ? [i] : []));
      for (let k = 1; k < at.length; k++) expect(at[k]! - at[k - 1]!, `slot ${slot} skipped a step`).toBe(1);
    }
  }, 120_000);

  it.skipIf(skip)('aborting one of four leaves the others unchanged, and its slot serves the next request', async () => {
    const stop = new AbortController();
    const seen = counter(5);
    const runs = PROMPTS.map((prompt, i) => rt.complete({
      prompt, maxTokens: MAX_TOKENS, temperature: 0,
      ...(i === 1 ? { signal: stop.signal, onToken: seen.fired } : {}),
    }));
    await seen.reached;
    stop.abort();
    const results = await Promise.all(runs);
    expect(results[1]!.finishReason).toBe('abort');
    expect(results[1]!.tokens.length).toBeLessThan(MAX_TOKENS);
    expect(results[1]!.tokens).toEqual(expected[1]!.slice(0, results[1]!.tokens.length));
    for (const i of [0, 2, 3]) expect(results[i]!.tokens).toEqual(expected[i]);
    const next = await rt.complete({ prompt: PROMPTS[1]!, maxTokens: MAX_TOKENS, temperature: 0 });
    expect(next.tokens).toEqual(expected[1]);
  }, 120_000);
});

describe('prefix sharing and admission', () => {
  it('a request whose 500-token prefix another slot caches copies it and prefills only the rest', async () => {
    const rt = await Runtime.load({ model: MODEL, threads: 2, slots: 2, maxBatch: 64 });
    const alone = await Runtime.load({ model: MODEL, threads: 2, slots: 1 });
    try {
      const system = Array.from({ length: 500 }, (_, i) => ((i * 131) % 500) + 10);
      const first = [1, ...system, 20, 21];
      const second = [1, ...system, 30, 31, 32];
      const started = counter(1);
      const a = rt.complete({ prompt: first, maxTokens: 6, temperature: 0, onToken: started.fired });
      await started.reached;
      // The first request still holds its slot: the second takes the other one.
      const b = await rt.complete({ prompt: second, maxTokens: 4, temperature: 0, logprobs: 5 });
      await a;
      expect(b.usage.cachedTokens).toBeGreaterThanOrEqual(501);
      expect(b.timings.prefillTokens).toBe(second.length - b.usage.cachedTokens);
      expect(b.timings.prefillTokens).toBeLessThanOrEqual(3);
      // The copied cache gives what prefilling it would, to the bit.
      const ref = await alone.complete({ prompt: second, maxTokens: 4, temperature: 0, logprobs: 5 });
      expect(b.tokens).toEqual(ref.tokens);
      expect(b.logprobs).toEqual(ref.logprobs);
    } finally {
      await rt.close();
      await alone.close();
    }
  }, 120_000);

  it('refuses a request beyond maxQueue at once with QueueFullError (503, Retry-After), the running ones unharmed', async () => {
    const rt = await Runtime.load({ model: MODEL, threads: 2, slots: 1, maxQueue: 1 });
    try {
      const running = rt.complete({ prompt: PROMPTS[0]!, maxTokens: 30, temperature: 0 });
      const queued = rt.complete({ prompt: PROMPTS[2]!, maxTokens: 5, temperature: 0 });
      const refused = await rt.complete({ prompt: PROMPTS[3]!, maxTokens: 5, temperature: 0 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(QueueFullError);
      expect(refused).toMatchObject({ status: 503, retryAfter: 1 });
      expect((await running).tokens).toHaveLength(30);
      expect((await queued).tokens).toHaveLength(5);
    } finally {
      await rt.close();
    }
  }, 60_000);
});
