// Teacher-forced logits of the shared tiny models against llama.cpp's recorded outputs, with the
// tolerances the models' README states.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Runtime } from '../../src/index.js';
import { logSoftmax } from '../../src/sampling/log-softmax.js';
import { MODEL_LOGPROB_TOLERANCE } from '../kernels/tolerances.js';
import { llamaOracleAvailable, llamaTopLogprobs } from '../helpers/llama-oracle.js';
import { MODELS, REFERENCE } from '../helpers/paths.js';

interface Reference {
  tokens: number[];
  positions: Array<{ pos: number; top: Array<{ id: number; logprob: number }> }>;
}

const CASES = [
  { model: 'tiny-llama-q4_0', tolerance: MODEL_LOGPROB_TOLERANCE.quantized },
  { model: 'tiny-llama-q8_0', tolerance: MODEL_LOGPROB_TOLERANCE.quantized },
  { model: 'tiny-qwen2-f16', tolerance: MODEL_LOGPROB_TOLERANCE.float },
  { model: 'tiny-qwen3-q8_0', tolerance: MODEL_LOGPROB_TOLERANCE.quantized },
  { model: 'stories260K', tolerance: MODEL_LOGPROB_TOLERANCE.float, reference: 'stories260K.once-upon-a-time' },
];

describe('logits match llama.cpp under teacher forcing', () => {
  for (const c of CASES) {
    it(c.model, async () => {
      const ref = JSON.parse(readFileSync(`${REFERENCE}/${c.reference ?? c.model}.llamacpp.json`, 'utf8')) as Reference;
      const rt = await Runtime.load({ model: `${MODELS}/${c.model}.gguf`, threads: 2, kvCacheType: 'f32', maxBatch: 16 });
      try {
        const vocab = rt.info.hparams.vocabSize;
        const logits = await rt.evaluate(ref.tokens);
        let worst = 0;
        for (const p of ref.positions) {
          const lp = logSoftmax(logits.subarray(p.pos * vocab, (p.pos + 1) * vocab));
          for (const e of p.top) worst = Math.max(worst, Math.abs(lp[e.id]! - e.logprob));
          const [first, second] = p.top;
          if (first && second && first.logprob - second.logprob > 0.05) {
            let argmax = 0;
            for (let i = 1; i < vocab; i++) if (lp[i]! > lp[argmax]!) argmax = i;
            expect(argmax, `top-1 at position ${p.pos}`).toBe(first.id);
          }
        }
        expect(worst).toBeLessThan(c.tolerance);
      } finally {
        await rt.close();
      }
    });
  }
});

// llama-2-tiny-random has no recorded reference: llama.cpp runs on the same file in the test.
describe('llama-2-tiny-random against llama.cpp on the same file', () => {
  it('teacher-forced log-probabilities', async (ctx) => {
    if (!(await llamaOracleAvailable())) return ctx.skip();
    const path = `${MODELS}/llama-2-tiny-random.gguf`;
    const rt = await Runtime.load({ model: path, threads: 2, kvCacheType: 'f32', maxBatch: 16 });
    try {
      const tokens = rt.tokenize('The quick brown fox jumps over the lazy dog. Ünïcödé, 日本語, and code: x = f(y);');
      const ref = await llamaTopLogprobs(path, tokens, 10);
      const vocab = rt.info.hparams.vocabSize;
      const logits = await rt.evaluate(tokens);
      let worst = 0;
      for (const p of ref) {
        const lp = logSoftmax(logits.subarray(p.pos * vocab, (p.pos + 1) * vocab));
        for (const e of p.top) worst = Math.max(worst, Math.abs(lp[e.id]! - e.logprob));
      }
      expect(ref.length).toBe(tokens.length);
      expect(worst).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
    } finally {
      await rt.close();
    }
  });
});
