// Every CUDA kernel but the matrix products (test/gpu/cuda-mat-mul.test.ts), run as a one-op graph
// on the CUDA backend against the TypeScript reference, as test/kernels/ops.test.ts does for the
// CPU; then graph replay, argmax, slot copies and the errors of bad graphs and steps.
import { describe, expect, it } from 'vitest';
import { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import { CudaGraphError, CudaUnavailableError } from '../../src/backend/cuda/errors.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { GraphBuilder } from '../../src/model/graph.js';
import { add as refAdd } from '../../src/reference/add.js';
import { attention as refAttention } from '../../src/reference/attention.js';
import { getRows as refGetRows } from '../../src/reference/get-rows.js';
import { dequantize, floatToFp16, fp16ToFloat, quantize } from '../../src/reference/quantize.js';
import { rmsNorm as refRmsNorm } from '../../src/reference/rms-norm.js';
import { rope as refRope } from '../../src/reference/rope.js';
import { swiglu as refSwiglu } from '../../src/reference/swiglu.js';
import { greedy } from '../../src/sampling/greedy.js';
import { maxRelError } from '../helpers/error-metrics.js';
import { prng } from '../helpers/prng.js';
import { gaussians } from '../helpers/random-floats.js';
import { CUDA_TOLERANCES, OP_TOLERANCES } from '../kernels/tolerances.js';
import { compileCuda, cudaSkipReason, cudaTitle, data, range, runSteps, type Step, table } from './cuda-device.js';

const WEIGHT_TYPES = [GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K];

interface AttentionCase {
  name: string;
  nHeads: number;
  nKv: number;
  headDim: number;
  contextSize: number;
  kv: 'f32' | 'f16';
  /** Tokens per step; positions continue from step to step. */
  steps: number[];
}

// Decode steps (8 tokens or fewer) split the cache across blocks (contexts of 256 and more); longer
// steps do not. Head dims pick 2, 4 or 8 values per lane (80 and 160 leave lanes idle; 160 needs
// more than 48 KiB of shared memory); a group of 32 query heads per KV head spans two blocks.
// Four equal decode steps in a row: the second is captured as a CUDA graph and the rest replay it.
const ATTENTION_CASES: AttentionCase[] = [
  { name: 'GQA 4/2, head dim 8, split cache, graph replay', nHeads: 4, nKv: 2, headDim: 8, contextSize: 4096, kv: 'f32', steps: [5, 1, 1, 1, 1] },
  { name: 'MQA 32/1, head dim 80, unsplit prefill', nHeads: 32, nKv: 1, headDim: 80, contextSize: 64, kv: 'f32', steps: [12, 1, 1] },
  { name: 'head dim 160, F16 cache, 3 splits', nHeads: 2, nKv: 2, headDim: 160, contextSize: 600, kv: 'f16', steps: [20, 1, 3] },
  { name: 'head dim 128, F16 cache, long prefill', nHeads: 8, nKv: 2, headDim: 128, contextSize: 512, kv: 'f16', steps: [70, 9, 1] },
];

const toHalfPrecision = (x: Float32Array) => x.map((v) => fp16ToFloat(floatToFp16(v)));

describe.skipIf(cudaSkipReason)(cudaTitle('CUDA ops match the TypeScript reference'), () => {
  const r = prng(17);

  it('get_rows decodes every weight type exactly as the reference', async () => {
    for (const type of WEIGHT_TYPES) {
      for (const cols of GgmlType[type].startsWith('Q') ? [256, 512] : [256, 40]) {
        const rows = 6;
        const q = quantize(type, gaussians(r, rows * cols));
        const ids = [5, 0, 3, 3, 1];
        const [y] = await runSteps((g, t) => g.getRows('x', g.constant('t', type, cols, rows, data(q)), t), [{ tokens: ids, positions: range(ids.length) }]);
        const rowBytes = q.length / rows;
        const ref = refGetRows((row) => dequantize(type, q.subarray(row * rowBytes, (row + 1) * rowBytes), cols), rows, cols, ids);
        expect(y, `${GgmlType[type]}, ${cols} columns`).toEqual(ref);
      }
    }
  });

  it('rms_norm over rows and over head groups', async () => {
    for (const [cols, group] of [[96, 96], [128, 32], [2048, 2048], [40, 8]] as const) {
      const x = gaussians(r, 5 * cols, 3);
      const w = gaussians(r, group);
      const [y] = await runSteps((g, t) => g.rmsNorm('n', g.getRows('x', table(g, x, cols), t), g.constant('w', GgmlType.F32, group, 1, data(w)), 1e-5, group), [{ tokens: range(5), positions: range(5) }]);
      expect(maxRelError(y!, refRmsNorm(x, w, (5 * cols) / group, group, 1e-5)), `${cols}/${group}`).toBeLessThan(CUDA_TOLERANCES.rmsNorm);
    }
  });

  it('rope, normal and neox, partial rotation, with and without frequency factors', async () => {
    const nHeads = 3, headDim = 16, n = 4;
    const x = gaussians(r, n * nHeads * headDim);
    const positions = [0, 7, 100, 3000];
    for (const neox of [false, true]) {
      for (const nRot of [16, 8]) {
        for (const factors of [undefined, Float32Array.from(range(nRot / 2), (i) => 1 + i / 3)]) {
          const [y] = await runSteps((g, t) => {
            const ff = factors ? g.constant('ff', GgmlType.F32, nRot / 2, 1, data(factors)) : undefined;
            return g.rope('r', g.getRows('x', table(g, x, nHeads * headDim), t), { nHeads, headDim, nRot, neox, freqBase: 10000, freqScale: 0.5, ...(ff !== undefined ? { freqFactors: ff } : {}) });
          }, [{ tokens: range(n), positions }], { contextSize: 4096 });
          const ref = refRope(x, n, nHeads, headDim, Int32Array.from(positions), { nRot, mode: neox ? 'neox' : 'normal', freqBase: 10000, freqScale: 0.5, ...(factors ? { freqFactors: factors } : {}) });
          expect(maxRelError(y!, ref), `neox=${neox} nRot=${nRot} factors=${!!factors}`).toBeLessThan(OP_TOLERANCES.rope);
        }
      }
    }
  });

  for (const c of ATTENTION_CASES) {
    it(`attention: ${c.name}`, async () => {
      const total = c.steps.reduce((a, b) => a + b, 0);
      const qw = c.nHeads * c.headDim, kvw = c.nKv * c.headDim;
      const q = gaussians(r, total * qw), k = gaussians(r, total * kvw), v = gaussians(r, total * kvw);
      const steps: Step[] = [];
      let at = 0;
      for (const n of c.steps) {
        steps.push({ tokens: range(n, at), positions: range(n, at) });
        at += n;
      }
      const scale = 1 / Math.sqrt(c.headDim);
      const outs = await runSteps((g, t) => g.attention('a', g.getRows('q', table(g, q, qw), t), g.getRows('k', table(g, k, kvw), t), g.getRows('v', table(g, v, kvw), t),
        { layer: 0, nHeads: c.nHeads, nKvHeads: c.nKv, headDim: c.headDim, scale }), steps, { contextSize: c.contextSize, kvCacheType: c.kv });
      const [kr, vr] = c.kv === 'f16' ? [toHalfPrecision(k), toHalfPrecision(v)] : [k, v];
      const ref = refAttention(q, kr, vr, { nTokens: total, nHeads: c.nHeads, nKvHeads: c.nKv, headDim: c.headDim, scale, positions: Int32Array.from(range(total)), kvLength: total });
      at = 0;
      for (let s = 0; s < steps.length; s++) {
        const n = c.steps[s]!;
        expect(maxRelError(outs[s]!, ref.subarray(at * qw, (at + n) * qw)), `step ${s}`).toBeLessThan(CUDA_TOLERANCES.attention);
        at += n;
      }
    });
  }

  it('swiglu and add', async () => {
    const cols = 40, n = 11;
    const a = gaussians(r, n * cols, 4), b = gaussians(r, n * cols);
    const [s] = await runSteps((g, t) => g.swiglu('s', g.getRows('a', table(g, a, cols), t), g.getRows('b', table(g, b, cols), t)), [{ tokens: range(n), positions: range(n) }]);
    expect(maxRelError(s!, refSwiglu(a, b))).toBeLessThan(CUDA_TOLERANCES.elementwise);
    const [sum] = await runSteps((g, t) => g.add('s', g.getRows('a', table(g, a, cols), t), g.getRows('b', table(g, b, cols), t)), [{ tokens: range(n), positions: range(n) }]);
    expect(sum).toEqual(refAdd(a, b));
  });
});

describe.skipIf(cudaSkipReason)(cudaTitle('CUDA plan: graphs, argmax, slots and errors'), () => {
  const r = prng(29);
  const dim = 64, vocab = 96, nHeads = 4, headDim = 16;
  const embeddings = gaussians(r, vocab * dim);
  const wq = quantize(GgmlType.Q8_0, gaussians(r, dim * dim, 0.2));
  const wo = quantize(GgmlType.Q4_0, gaussians(r, vocab * dim, 0.2));
  const norm = Float32Array.from({ length: dim }, () => 1);
  // A one-layer model in miniature: embeddings, norm, attention over the cache, logits.
  const model = (g: GraphBuilder, t: number): number => {
    const x = g.getRows('x', table(g, embeddings, dim), t);
    const h = g.rmsNorm('h', x, g.constant('n', GgmlType.F32, dim, 1, data(norm)), 1e-5);
    const q = g.mulMat('q', g.constant('wq', GgmlType.Q8_0, dim, dim, data(wq)), h);
    const qr = g.rope('qr', q, { nHeads, headDim, nRot: headDim, neox: false, freqBase: 10000, freqScale: 1 });
    const a = g.attention('a', qr, qr, h, { layer: 0, nHeads, nKvHeads: nHeads, headDim, scale: 0.25 });
    return g.mulMat('logits', g.constant('wo', GgmlType.Q4_0, dim, vocab, data(wo)), g.add('res', x, a));
  };
  const prompt: Step = { tokens: [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46], positions: range(11) };
  const decode = (i: number): Step => ({ tokens: [(7 * i) % vocab], positions: [11 + i] });
  const steps = [prompt, ...range(6).map(decode), prompt, ...range(6).map(decode)];

  it('captured CUDA graphs replay exactly what direct launches compute', async () => {
    const direct = await runSteps(model, steps, { graphs: false, contextSize: 512 });
    const replayed = await runSteps(model, steps, { contextSize: 512 });
    for (let s = 0; s < steps.length; s++) expect(replayed[s], `step ${s}`).toEqual(direct[s]);
  });

  // rms_norm and swiglu quantize their output when a quantized product reads it next; adding zeros
  // in between (x + 0 is x) makes the product quantize it itself. Both must agree to the bit.
  it('norms and swiglu that quantize for the next product match the product quantizing', async () => {
    const cols = 256, rows = 512;
    const x = gaussians(r, 40 * cols, 3), up = gaussians(r, 40 * cols);
    const w1 = quantize(GgmlType.Q4_K, gaussians(r, rows * cols)), w2 = quantize(GgmlType.Q6_K, gaussians(r, cols * rows));
    const normW = gaussians(r, cols);
    const block = (zeros: boolean) => (g: GraphBuilder, t: number) => {
      const pass = (id: number, width: number) => zeros ? g.add('z', id, g.getRows('zeros', table(g, new Float32Array(40 * width), width), t)) : id;
      const h = g.rmsNorm('h', g.getRows('x', table(g, x, cols), t), g.constant('n', GgmlType.F32, cols, 1, data(normW)), 1e-5);
      const a = g.mulMat('a', g.constant('w1', GgmlType.Q4_K, cols, rows, data(w1)), pass(h, cols));
      const s = g.swiglu('s', g.mulMat('b', g.constant('w1b', GgmlType.Q4_K, cols, rows, data(w1)), pass(h, cols)), a);
      return g.mulMat('c', g.constant('w2', GgmlType.Q6_K, rows, cols, data(w2)), pass(s, rows));
    };
    for (const n of [1, 3, 40]) {
      const steps = [{ tokens: range(n), positions: range(n) }];
      const [fused] = await runSteps(block(false), steps, { contextSize: 64 });
      const [separate] = await runSteps(block(true), steps, { contextSize: 64 });
      expect(fused, `${n} token(s)`).toEqual(separate);
    }
  });

  it('forwardArgmax gives the greedy token of the last row', async () => {
    const full = await compileCuda(model, { contextSize: 512 });
    const greedyOnly = await compileCuda(model, { contextSize: 512 });
    try {
      for (const s of [prompt, decode(0), decode(1), decode(2)]) {
        const n = s.tokens.length;
        const y = new Float32Array(n * vocab); // the logits keep a row per token: no output_rows here
        await full.forward(Int32Array.from(s.tokens), Int32Array.from(s.positions), 0, true, y);
        expect(await greedyOnly.forwardArgmax(Int32Array.from(s.tokens), Int32Array.from(s.positions), 0)).toBe(greedy(y.subarray((n - 1) * vocab)));
      }
    } finally {
      full.dispose();
      greedyOnly.dispose();
    }
  });

  it('copySlot carries a prompt to another slot', async () => {
    const c = await compileCuda(model, { contextSize: 512, slots: 2 });
    try {
      const run = async (s: Step, slot: number) => {
        const y = new Float32Array(s.tokens.length * vocab);
        await c.forward(Int32Array.from(s.tokens), Int32Array.from(s.positions), slot, true, y);
        return y;
      };
      await run(prompt, 0);
      c.copySlot(0, 1, prompt.tokens.length);
      expect(await run(decode(0), 1)).toEqual(await run(decode(0), 0));
    } finally {
      c.dispose();
    }
  });

  it('rejects graphs it cannot run when they are compiled, with typed errors', async () => {
    const w = new Float32Array(4 * 8);
    const bad = (g: GraphBuilder, t: number) => g.mulMat('m', g.constant('w', GgmlType.F32, 6, 2, data(new Float32Array(12))), g.getRows('x', table(g, w, 8), t));
    await expect(compileCuda(bad)).rejects.toThrow(CudaGraphError);
    await expect(compileCuda(bad)).rejects.toThrow(/does not match weight width/);
    const wide = 2 * 288;
    const big = gaussians(r, 2 * wide);
    const tooWide = (g: GraphBuilder, t: number) => {
      const x = g.getRows('x', table(g, big, wide), t);
      return g.attention('a', x, x, x, { layer: 0, nHeads: 2, nKvHeads: 2, headDim: 288, scale: 1 });
    };
    await expect(compileCuda(tooWide)).rejects.toThrow(/head dimensions up to 256/);
    await expect(new CudaBackend({ device: 99 }).compile(new GraphBuilder().build(0), { slots: 1, contextSize: 8, maxBatch: 4, kvCacheType: 'f32', threads: 1 })).rejects.toThrow(CudaUnavailableError);
  });

  it('rejects bad steps with errors, not crashes', async () => {
    const w = gaussians(r, 4 * 8);
    const c = await compileCuda((g, t) => g.getRows('x', g.constant('t', GgmlType.F32, 8, 4, data(w)), t), { contextSize: 8, maxBatch: 4 });
    try {
      const y = new Float32Array(8);
      await expect(c.forward(Int32Array.of(4), Int32Array.of(0), 0, true, y)).rejects.toThrow(/outside the vocabulary/);
      await expect(c.forward(Int32Array.of(1), Int32Array.of(8), 0, true, y)).rejects.toThrow(/outside the context/);
      await expect(c.forward(Int32Array.of(1, 2), Int32Array.of(0, 1), 0, true, y)).rejects.toThrow(/output buffer/);
      await expect(c.forward(Int32Array.of(1), Int32Array.of(0), 3, true, y)).rejects.toThrow(/slot 3/);
      await expect(c.forward(Int32Array.of(0, 1, 2, 3, 0), Int32Array.of(0, 1, 2, 3, 4), 0, true, new Float32Array(40))).rejects.toThrow(/1 to 4 tokens/);
      await c.forward(Int32Array.of(1), Int32Array.of(0), 0, true, y);
      expect(y).toEqual(w.subarray(8, 16));
    } finally {
      c.dispose();
    }
  });
});
