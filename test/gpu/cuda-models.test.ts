// Whole models on the CUDA backend: stories260K's greedy text against llama2.c's and the CPU
// backend's, and the shared tiny models' teacher-forced log-probabilities against llama.cpp's with
// CUDA_MODEL_LOGPROB_TOLERANCE, in prefill chunks of 16 (tensor cores) and of 4 (the decode
// kernels), through Runtime.load({ backend: 'cuda' }).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Runtime } from '../../src/index.js';
import { logSoftmax } from '../../src/sampling/log-softmax.js';
import { MODELS, REFERENCE } from '../helpers/paths.js';
import { CUDA_MODEL_LOGPROB_TOLERANCE as TOLERANCE } from '../kernels/tolerances.js';
import { cudaSkipReason, cudaTitle } from './cuda-device.js';

interface Reference {
  tokens: number[];
  greedy_tokens: number[];
  greedy_text?: string;
  positions: Array<{ pos: number; top: Array<{ id: number; logprob: number }> }>;
}

const PROMPT = 'Once upon a time';

const CASES = [
  { model: 'tiny-llama-q4_0', tolerance: TOLERANCE.quantized },
  { model: 'tiny-llama-q8_0', tolerance: TOLERANCE.quantized },
  { model: 'tiny-qwen2-f16', tolerance: TOLERANCE.float },
  { model: 'tiny-qwen3-q8_0', tolerance: TOLERANCE.quantized },
  { model: 'stories260K', tolerance: TOLERANCE.float, reference: 'stories260K.once-upon-a-time' },
];

describe.skipIf(cudaSkipReason)(cudaTitle('models on the CUDA backend'), () => {
  it('stories260K greedy: llama2.c\'s text, the CPU backend\'s tokens, with F32 and F16 KV caches', async () => {
    const ref = JSON.parse(readFileSync(`${REFERENCE}/stories260K.once-upon-a-time.llamacpp.json`, 'utf8')) as Reference;
    const llama2c = readFileSync(`${REFERENCE}/stories260K.once-upon-a-time.llama2c.txt`, 'utf8');
    const cpu = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, backend: 'cpu', threads: 2 });
    const cpuTokens = (await cpu.complete({ prompt: PROMPT, maxTokens: 200, temperature: 0 })).tokens;
    await cpu.close();
    for (const kvCacheType of ['f32', 'f16'] as const) {
      const progress: number[] = [];
      const rt = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, backend: 'cuda', kvCacheType, onProgress: (f) => progress.push(f) });
      try {
        expect(rt.info.backend).toBe('cuda');
        expect(progress.at(-1)).toBe(1);
        expect(progress.every((f, i) => i === 0 || f >= progress[i - 1]!)).toBe(true);
        const r = await rt.complete({ prompt: PROMPT, maxTokens: 200, temperature: 0 });
        expect(r.tokens, `${kvCacheType} KV cache vs the CPU backend`).toEqual(cpuTokens);
        if (kvCacheType === 'f32') {
          expect(r.tokens).toEqual(ref.greedy_tokens);
          expect(llama2c.startsWith(PROMPT + r.text)).toBe(true);
        }
        // The second request reuses the prompt's cache: decode steps replay a captured graph.
        const again = await rt.complete({ prompt: PROMPT, maxTokens: 200, temperature: 0 });
        expect(again.usage.cachedTokens).toBe(4);
        expect(again.tokens).toEqual(r.tokens);
      } finally {
        await rt.close();
      }
    }
  });

  for (const c of CASES) {
    for (const maxBatch of [16, 4]) {
      it(`${c.model}: log-probabilities match llama.cpp, prefill chunks of ${maxBatch}`, async () => {
        const ref = JSON.parse(readFileSync(`${REFERENCE}/${c.reference ?? c.model}.llamacpp.json`, 'utf8')) as Reference;
        const rt = await Runtime.load({ model: `${MODELS}/${c.model}.gguf`, backend: 'cuda', kvCacheType: 'f32', maxBatch });
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
  }

  it("backend 'auto' picks the CUDA device", async () => {
    const rt = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, backend: 'auto' });
    try {
      expect(rt.info.backend).toBe('cuda');
    } finally {
      await rt.close();
    }
  });
});
