// Weight types the shared files lack (BF16, Q4_K, Q5_K, Q6_K, and F16 on llama): the test writes
// the tiny llama model in each type with kiln's quantizers and compares kiln's teacher-forced
// log-probabilities with llama.cpp's on the same file.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Runtime } from '../../src/index.js';
import { logSoftmax } from '../../src/sampling/log-softmax.js';
import { llamaOracleAvailable, llamaTopLogprobs } from '../helpers/llama-oracle.js';
import { MODELS, REFERENCE } from '../helpers/paths.js';
import { GgmlType, requantizeModel } from '../helpers/requantize.js';
import { MODEL_LOGPROB_TOLERANCE } from '../kernels/tolerances.js';

const tokens = (JSON.parse(readFileSync(`${REFERENCE}/tiny-llama-q8_0.llamacpp.json`, 'utf8')) as { tokens: number[] }).tokens;
const TYPES = [
  { type: GgmlType.F16, tolerance: MODEL_LOGPROB_TOLERANCE.float },
  { type: GgmlType.BF16, tolerance: MODEL_LOGPROB_TOLERANCE.float },
  { type: GgmlType.Q4_K, tolerance: MODEL_LOGPROB_TOLERANCE.quantized },
  { type: GgmlType.Q5_K, tolerance: MODEL_LOGPROB_TOLERANCE.quantized },
  { type: GgmlType.Q6_K, tolerance: MODEL_LOGPROB_TOLERANCE.quantized },
];

let dir = '';
let oracle = false;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kiln-types-'));
  oracle = await llamaOracleAvailable();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('weight types against llama.cpp on the same file', () => {
  for (const { type, tolerance } of TYPES) {
    it(GgmlType[type], async (ctx) => {
      if (!oracle) return ctx.skip();
      const path = join(dir, `tiny-llama-${GgmlType[type]}.gguf`);
      requantizeModel(`${MODELS}/tiny-llama-q8_0.gguf`, path, type);
      const ref = await llamaTopLogprobs(path, tokens, 10);
      const rt = await Runtime.load({ model: path, threads: 2, kvCacheType: 'f32', maxBatch: 16 });
      try {
        const vocab = rt.info.hparams.vocabSize;
        const logits = await rt.evaluate(tokens);
        let worst = 0;
        for (const p of ref) {
          const lp = logSoftmax(logits.subarray(p.pos * vocab, (p.pos + 1) * vocab));
          for (const e of p.top) worst = Math.max(worst, Math.abs(lp[e.id]! - e.logprob));
        }
        expect(worst).toBeLessThan(tolerance);
      } finally {
        await rt.close();
      }
    });
  }
});
