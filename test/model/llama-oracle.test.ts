// The llama.cpp oracle (test/helpers/llama-oracle.ts) must reproduce the shared references, which
// node-llama-cpp 3.21.1 made with the same settings; other tests then trust it for files and types
// the references do not cover.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { llamaGreedy, llamaOracleAvailable, llamaTopLogprobs, type TopLogprobs } from '../helpers/llama-oracle.js';

const MODELS_DIR = fileURLToPath(new URL('../../../shared/models/', import.meta.url));
const REFERENCE_DIR = join(MODELS_DIR, 'reference');
// Same binary, same settings: only the references' 6 significant digits separate them (~5e-6).
const LOGPROB_TOLERANCE = 1e-3;

interface LlamaCppReference {
  model: string;
  tokens: number[];
  positions: TopLogprobs[];
  greedy_tokens: number[];
}

function readReference(file: string): LlamaCppReference {
  return JSON.parse(readFileSync(join(REFERENCE_DIR, file), 'utf8')) as LlamaCppReference;
}

function expectTopMatches(actual: TopLogprobs | undefined, expected: TopLogprobs): void {
  expect(actual?.pos).toBe(expected.pos);
  expect(actual!.top.map((e) => e.id), `top ids at position ${expected.pos}`).toEqual(expected.top.map((e) => e.id));
  actual!.top.forEach((e, rank) => {
    const diff = Math.abs(e.logprob - expected.top[rank]!.logprob);
    expect(diff, `logprob of token ${e.id} at position ${expected.pos}`).toBeLessThan(LOGPROB_TOLERANCE);
  });
}

const available = await llamaOracleAvailable();
if (!available) console.warn('skipping the llama.cpp oracle tests (reason above)');

describe.skipIf(!available)('llama.cpp oracle reproduces the shared references', () => {
  const tinyReferences = readdirSync(REFERENCE_DIR).filter((f) => /^tiny-.+\.llamacpp\.json$/.test(f)).sort();

  it('finds the tiny-model references', () => {
    expect(tinyReferences).toContain('tiny-llama-q8_0.llamacpp.json');
  });

  it.each(tinyReferences)('%s: top-10 logprobs at every position, then the greedy continuation', async (file) => {
    const ref = readReference(file);
    const modelPath = join(MODELS_DIR, ref.model);
    const top = await llamaTopLogprobs(modelPath, ref.tokens, 10);
    expect(top).toHaveLength(ref.tokens.length);
    for (const expected of ref.positions) expectTopMatches(top[expected.pos], expected);
    expect(await llamaGreedy(modelPath, ref.tokens, ref.greedy_tokens.length)).toEqual(ref.greedy_tokens);
  });

  it('stories260K: top-10 after "Once upon a time" and the 200-token greedy story', async () => {
    const ref = readReference('stories260K.once-upon-a-time.llamacpp.json');
    const modelPath = join(MODELS_DIR, ref.model);
    const top = await llamaTopLogprobs(modelPath, ref.tokens, 10);
    expect(ref.positions.map((p) => p.pos)).toEqual([ref.tokens.length - 1]);
    expectTopMatches(top.at(-1), ref.positions[0]!);
    expect(ref.greedy_tokens).toHaveLength(200);
    expect(await llamaGreedy(modelPath, ref.tokens, 200)).toEqual(ref.greedy_tokens);
  });
});
