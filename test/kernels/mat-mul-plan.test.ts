// mul_mat as a plan runs it, at the 'avx2' and 'best' levels (tiled kernels, Q4_0 weights packed 8
// rows at a time when the plan is built, and Q8_0 too where the AVX-512 kernels run) against the
// 'generic' level (one vecDot per output): Q8_0 and Q4_0
// with the same bits, float types within the best-vs-generic tolerance. Token counts and row counts
// cover whole tiles and every kind of edge.
import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { GGML_TYPES, GgmlType } from '../../src/gguf/ggml-type.js';
import { GraphBuilder, type WeightData } from '../../src/model/graph.js';
import { native } from '../../src/native/binding.js';
import { quantize } from '../../src/reference/quantize.js';
import { maxRelError } from '../helpers/error-metrics.js';
import { prng } from '../helpers/prng.js';
import { gaussians } from '../helpers/random-floats.js';
import { TOLERANCES } from './tolerances.js';

const data = (v: ArrayBufferView): WeightData => ({ buffer: v.buffer as ArrayBuffer, byteOffset: v.byteOffset, byteLength: v.byteLength });
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const SAME_BITS = new Set([GgmlType.Q8_0, GgmlType.Q4_0]);

// Builds a 2-thread plan of g with `out` as its output and runs one step of nTokens rows (token ids
// `ids`, every row's output): `width` floats per row. `beforeStep` runs between building and running
// (a kernel level changed after packing).
async function runGraph(g: GraphBuilder, out: number, nTokens: number, width: number, ids = Int32Array.from(range(nTokens)),
                        beforeStep?: () => void): Promise<Float32Array> {
  const plan = await new CpuBackend().compile(g.build(out), { slots: 1, contextSize: 64, maxBatch: nTokens, kvCacheType: 'f32', threads: 2 });
  try {
    beforeStep?.();
    const y = new Float32Array(nTokens * width);
    await plan.forward(ids, Int32Array.from(range(nTokens)), 0, true, y);
    return y;
  } finally {
    plan.dispose();
  }
}

async function product(level: 'generic' | 'avx2' | 'best', type: GgmlType, weights: Uint8Array, rows: number, cols: number, x: Float32Array, nTokens: number): Promise<Float32Array> {
  native().setKernelLevel(level);
  const g = new GraphBuilder();
  const table = g.constant('x', GgmlType.F32, cols, nTokens, data(x));
  const out = g.mulMat('y', g.constant('w', type, cols, rows, data(weights)), g.getRows('rows', table, g.tokens()));
  return runGraph(g, out, nTokens, rows);
}

afterAll(() => native().setKernelLevel('best'));

describe('mul_mat in a plan: best kernels against generic', () => {
  for (const type of [GgmlType.Q4_0, GgmlType.Q8_0, GgmlType.F16, GgmlType.BF16, GgmlType.F32]) {
    it(GGML_TYPES[type].name, async () => {
      const r = prng(500 + type);
      const cols = GGML_TYPES[type].blockSize === 1 ? 261 : 320;
      for (const rows of [72, 21]) {
        const weights = quantize(type, gaussians(r, rows * cols));
        for (const nTokens of [1, 2, 7, 13, 37]) {
          const x = gaussians(r, nTokens * cols);
          const generic = await product('generic', type, weights, rows, cols, x, nTokens);
          // Both SIMD tiers: each packs for its own kernels.
          for (const level of ['avx2', 'best'] as const) {
            const simd = await product(level, type, weights, rows, cols, x, nTokens);
            const label = `${level}, ${rows} rows, ${nTokens} tokens`;
            if (SAME_BITS.has(type)) expect(simd, label).toEqual(generic);
            else expect(maxRelError(simd, generic), label).toBeLessThanOrEqual(TOLERANCES.mulMatBestVsGeneric);
          }
        }
      }
    });
  }
});

describe('tied Q8_0 embeddings in a plan', () => {
  // One Q8_0 table read by get_rows and by mul_mat (an output head tied to the embeddings): the SIMD
  // tiers pack it and read both from the packed copy, the generic tier reads the file's layout.
  it('get_rows and mul_mat give the generic bits', async () => {
    const r = prng(77);
    const vocab = 48, cols = 96, nTokens = 11;
    const table = quantize(GgmlType.Q8_0, gaussians(r, vocab * cols));
    const ids = Int32Array.from(range(nTokens), (i) => (i * 29 + 5) % vocab);
    const run = async (level: 'generic' | 'avx2' | 'best') => {
      native().setKernelLevel(level);
      const g = new GraphBuilder();
      const embd = g.constant('embd', GgmlType.Q8_0, cols, vocab, data(table));
      const out = g.mulMat('logits', embd, g.getRows('x', embd, g.tokens()));
      return runGraph(g, out, nTokens, vocab, ids);
    };
    const generic = await run('generic');
    // Row i of the output holds token i's embedding dotted with every row; its own row is its norm, > 0.
    for (let i = 0; i < nTokens; i++) expect(generic[i * vocab + ids[i]!]).toBeGreaterThan(0);
    expect(await run('avx2')).toEqual(generic);
    expect(await run('best')).toEqual(generic);
  });
});

describe('packed Q8_0 and Q4_0 in segments of 1024 values and super-groups of 32 rows', () => {
  // The packed order goes super-group by super-group (Q8_0: 4 groups of 8 rows; the AVX-512 Q4_0
  // tile: 2 pairs of groups, an odd last group after them), and within one segment by segment (32
  // blocks), so shapes with a short last segment, a short last super-group or both must still give
  // every row its own blocks: decode (segment after segment with the rows' sums carried), a few
  // tokens (Q8_0 up to 8 as decode, token after token over each segment), more tokens (Q8_0
  // unpacked to the file's layout; Q4_0 in row chunks of 16 that may start halfway through a
  // super-group) and get_rows of tied Q8_0 embeddings.
  const shapes = [
    { rows: 72, cols: 32 * 37 },   // 9 groups: 2 super-groups and 1 group; segments of 32 and 5 blocks
    { rows: 200, cols: 32 * 64 },  // 25 groups; two whole segments
    { rows: 32, cols: 32 * 97 },   // one super-group; segments of 32, 32, 32 and 1 blocks
    { rows: 48, cols: 32 * 37 },   // a super-group and a short one (Q4_0: of one pair), each chunk of 16 rows its own
  ];
  for (const type of [GgmlType.Q8_0, GgmlType.Q4_0]) {
    for (const { rows, cols } of shapes) {
      it(`${GGML_TYPES[type].name}: ${rows} rows x ${cols} values`, async () => {
        const r = prng(rows + cols + type);
        const weights = quantize(type, gaussians(r, rows * cols));
        for (const nTokens of [1, 3, 8, 9, 37]) {
          const x = gaussians(r, nTokens * cols);
          const generic = await product('generic', type, weights, rows, cols, x, nTokens);
          for (const level of ['avx2', 'best'] as const) {
            expect(await product(level, type, weights, rows, cols, x, nTokens), `${level}, ${nTokens} tokens`).toEqual(generic);
          }
        }
      });
    }
  }

  it('tied embeddings over several segments: get_rows reads the packed table', async () => {
    // A table read by get_rows and by mul_mat is packed once, and get_rows then reads its rows out
    // of the packed order.
    const r = prng(78);
    const vocab = 40, cols = 32 * 37, nTokens = 9;
    const table = quantize(GgmlType.Q8_0, gaussians(r, vocab * cols));
    const ids = Int32Array.from(range(nTokens), (i) => (i * 17 + 3) % vocab);
    const run = async (level: 'generic' | 'avx2' | 'best') => {
      native().setKernelLevel(level);
      const g = new GraphBuilder();
      const embd = g.constant('embd', GgmlType.Q8_0, cols, vocab, data(table));
      return runGraph(g, g.mulMat('logits', embd, g.getRows('x', embd, g.tokens())), nTokens, vocab, ids);
    };
    const generic = await run('generic');
    // The generic tier reads the file's layout; each token's own row is its squared norm, > 0.
    for (let i = 0; i < nTokens; i++) expect(generic[i * vocab + ids[i]!]).toBeGreaterThan(0);
    expect(await run('avx2')).toEqual(generic);
    expect(await run('best')).toEqual(generic);
  });
});

describe('a plan built at one level and run at another', () => {
  // Packing is chosen when the plan is built (Q8_0 where the AVX-512 kernels run); run at the AVX2
  // tier, the packed weights go through the AVX2 kernels and still give the generic bits.
  it('Q8_0 packed at best, run at avx2', async () => {
    const r = prng(91);
    // 40 rows: a super-group and a group; 1184 values: segments of 32 and 5 blocks.
    const rows = 40, cols = 32 * 37;
    const weights = quantize(GgmlType.Q8_0, gaussians(r, rows * cols));
    for (const nTokens of [1, 6]) {
      const x = gaussians(r, nTokens * cols);
      const generic = await product('generic', GgmlType.Q8_0, weights, rows, cols, x, nTokens);
      native().setKernelLevel('best');
      const g = new GraphBuilder();
      const table = g.constant('x', GgmlType.F32, cols, nTokens, data(x));
      const out = g.mulMat('y', g.constant('w', GgmlType.Q8_0, cols, rows, data(weights)), g.getRows('rows', table, g.tokens()));
      const y = await runGraph(g, out, nTokens, rows, undefined, () => native().setKernelLevel('avx2'));
      expect(y, `${nTokens} tokens`).toEqual(generic);
    }
  });
});

describe('Q4_K and Q5_K packed row by row for the AVX2 kernels', () => {
  // Where the AVX2 kernels run (not the AVX-512 ones), a plan repacks Q4_K and Q5_K rows (each
  // group's nibbles, and Q5_K's fifth bits, in the order the kernels pair them; the scales unpacked)
  // and its products must give the bits of the AVX2 kernels on the file's layout, which
  // addon.mulMat runs: decode (one token at a time), continuous-batching steps of 2-8 tokens (padded
  // tiles), and prefill (tiles of 8 and 4 tokens, then 1-3 one at a time). Their rows can be read
  // back, so get_rows of tied embeddings reads the packed copy.
  const addon = native();
  const fileLayout = (type: GgmlType, weights: Uint8Array, rows: number, cols: number, x: Float32Array, nTokens: number) => {
    const y = new Float32Array(nTokens * rows);
    addon.mulMat(type, weights, rows, cols, x, nTokens, y, 2);
    return y;
  };
  const shapes = [
    { rows: 21, cols: 256 },       // one block a row; rows not a multiple of a tile
    { rows: 72, cols: 256 * 5 },   // headers of 100 bytes, padded to 128
    { rows: 40, cols: 256 * 22 },  // TinyLlama's ffn_down width
  ];
  for (const type of [GgmlType.Q4_K, GgmlType.Q5_K]) {
    const name = GGML_TYPES[type].name;
    for (const { rows, cols } of shapes) {
      it(`${name}: ${rows} rows x ${cols} values`, async () => {
        const r = prng(rows * 7 + cols + type);
        const weights = quantize(type, gaussians(r, rows * cols));
        for (const nTokens of [1, 2, 3, 5, 8, 9, 15, 37]) {
          const x = gaussians(r, nTokens * cols);
          addon.setKernelLevel('avx2');
          const expected = fileLayout(type, weights, rows, cols, x, nTokens);
          expect(addon.timeMulMat(type, weights, rows, cols, x, nTokens, 1).packed).toBe(addon.cpuFeatures().avx2);
          expect(await product('avx2', type, weights, rows, cols, x, nTokens), `${nTokens} tokens`).toEqual(expected);
          // The best tier: packed too where it runs the AVX2 kernels, its own kernels' bits (the
          // same) where it runs the AVX-512 ones.
          expect(await product('best', type, weights, rows, cols, x, nTokens), `best, ${nTokens} tokens`).toEqual(expected);
        }
      });
    }

    it(`${name}: every value reaches the product`, async () => {
      // One changed value (row 0, block 0, value 37: the high nibble of its 6th byte of values) must
      // change row 0's sum, and the packed product must follow it: a packing that dropped or moved
      // a value would not.
      const r = prng(5 + type);
      const rows = 8, cols = 512;
      const weights = quantize(type, gaussians(r, rows * cols));
      const x = gaussians(r, cols);
      const changed = weights.slice();
      const values = type === GgmlType.Q5_K ? 48 : 16;  // d, dmin, scales (and Q5_K's 32 bytes of fifth bits)
      changed[values + 5]! ^= 0x10;
      addon.setKernelLevel('avx2');
      const y = await product('avx2', type, changed, rows, cols, x, 1);
      expect(y[0]).not.toEqual(fileLayout(type, weights, rows, cols, x, 1)[0]);
      expect(y).toEqual(fileLayout(type, changed, rows, cols, x, 1));
    });

    it(`${name}: tied embeddings, get_rows reads the packed rows back`, async () => {
      // The table is read by get_rows and by mul_mat (an output head tied to the embeddings), so the
      // plan packs it and get_rows reads its rows out of the packed copy: the logits must be the file
      // layout's product of the table with its own rows as the generic get_rows gives them.
      const r = prng(79 + type);
      const vocab = 24, cols = 256 * 3, nTokens = 7;
      const table = quantize(type, gaussians(r, vocab * cols));
      const ids = Int32Array.from(range(nTokens), (i) => (i * 11 + 2) % vocab);
      native().setKernelLevel('generic');
      const lookup = new GraphBuilder();
      const rows = await runGraph(lookup, lookup.getRows('x', lookup.constant('embd', type, cols, vocab, data(table)), lookup.tokens()), nTokens, cols, ids);
      expect(rows.some((v) => v !== 0)).toBe(true);
      for (const level of ['avx2', 'best'] as const) {
        native().setKernelLevel(level);
        const g = new GraphBuilder();
        const embd = g.constant('embd', type, cols, vocab, data(table));
        const logits = await runGraph(g, g.mulMat('logits', embd, g.getRows('x', embd, g.tokens())), nTokens, vocab, ids);
        expect(logits, level).toEqual(fileLayout(type, table, vocab, cols, rows, nTokens));
      }
    });
  }
});

describe('products of one activation in a row', () => {
  // A layer's q/k/v (and gate/up) read one activation: the plan converts it once and runs the
  // products' chunks in one parallel loop. Each product must keep the bits it has on its own, which a
  // second graph gives by putting a product of another activation between them. The products' outputs
  // are brought to one width by F32 products and summed, so a product computed wrong, late or not
  // at all changes the result.
  const cols = 512;
  const cases: { label: string; products: { type: GgmlType; rows: number; bias?: boolean }[] }[] = [
    { label: 'K-quants sharing Q8_K activations', products: [{ type: GgmlType.Q4_K, rows: 64 }, { type: GgmlType.Q6_K, rows: 16 }, { type: GgmlType.Q4_K, rows: 16 }] },
    { label: 'packed Q4_0 beside Q8_0', products: [{ type: GgmlType.Q4_0, rows: 64 }, { type: GgmlType.Q8_0, rows: 16 }, { type: GgmlType.Q4_0, rows: 24 }] },
    { label: 'Q8_0 with biases (Qwen2)', products: [{ type: GgmlType.Q8_0, rows: 64, bias: true }, { type: GgmlType.Q8_0, rows: 16, bias: true }, { type: GgmlType.Q8_0, rows: 16, bias: true }] },
    { label: 'activation types that differ (F16, Q8_0, F32)', products: [{ type: GgmlType.F16, rows: 64 }, { type: GgmlType.Q8_0, rows: 32 }, { type: GgmlType.F32, rows: 8 }] },
    { label: 'gate and up', products: [{ type: GgmlType.Q4_K, rows: 96 }, { type: GgmlType.Q4_K, rows: 96 }] },
  ];
  for (const c of cases) {
    it(c.label, async () => {
      const r = prng(4242);
      const width = 64;
      const weights = c.products.map((p) => quantize(p.type, gaussians(r, p.rows * cols)));
      const biases = c.products.map((p) => gaussians(r, p.rows));
      const widen = c.products.map((p) => gaussians(r, width * p.rows));
      const other = gaussians(r, 37 * cols);
      const run = async (level: 'avx2' | 'best', apart: boolean, x: Float32Array, nTokens: number) => {
        native().setKernelLevel(level);
        const g = new GraphBuilder();
        const rows = g.getRows('x', g.constant('table', GgmlType.F32, cols, nTokens, data(x)), g.tokens());
        const z = g.getRows('z', g.constant('other', GgmlType.F32, cols, nTokens, data(other.subarray(0, nTokens * cols))), g.tokens());
        const outs = c.products.map((p, i) => {
          if (apart && i > 0) g.mulMat(`apart${i}`, g.constant(`o${i}`, GgmlType.F32, cols, 8, data(other.subarray(0, 8 * cols))), z);
          const bias = p.bias ? g.constant(`b${i}`, GgmlType.F32, p.rows, 1, data(biases[i]!)) : undefined;
          return g.mulMat(`p${i}`, g.constant(`w${i}`, p.type, cols, p.rows, data(weights[i]!)), rows, bias);
        });
        const wide = outs.map((o, i) => g.mulMat(`wide${i}`, g.constant(`f${i}`, GgmlType.F32, c.products[i]!.rows, width, data(widen[i]!)), o));
        const sum = wide.slice(1).reduce((acc, o, i) => g.add(`sum${i}`, acc, o), wide[0]!);
        return runGraph(g, sum, nTokens, width);
      };
      for (const nTokens of [1, 3, 37]) {
        const x = gaussians(r, nTokens * cols);
        for (const level of ['avx2', 'best'] as const) {
          const together = await run(level, false, x, nTokens);
          expect(together.some((v) => v !== 0), 'a result').toBe(true);
          expect(together, `${level}, ${nTokens} tokens`).toEqual(await run(level, true, x, nTokens));
        }
      }
    });
  }
});
