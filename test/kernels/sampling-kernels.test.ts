// The addon's sampling kernels (argmax, softmax, softmaxDraw): each SIMD version against its scalar
// definition ('generic'), bit for bit, and the definitions against plain double-precision math.
import { afterAll, describe, expect, it } from 'vitest';
import { native } from '../../src/native/binding.js';
import { Candidates } from '../../src/sampling/candidates.js';
import { selectTop } from '../../src/sampling/select-top.js';
import { minP } from '../../src/sampling/min-p.js';
import { topP } from '../../src/sampling/top-p.js';
import { prng } from '../helpers/prng.js';

const FLOAT32_MAX = 3.4028234663852886e38;

function row(seed: number, n: number, spread = 8): Float32Array {
  const r = prng(seed);
  return Float32Array.from({ length: n }, () => (r.next() - 0.5) * spread);
}

/** Softmax in double with Math.exp, the candidates' clamp and the temperature first. */
function softmaxDouble(x: Float32Array, t = 1): number[] {
  const l = Array.from(x, (v) => {
    let c = v >= FLOAT32_MAX ? FLOAT32_MAX : v > -FLOAT32_MAX ? v : -FLOAT32_MAX;
    if (t !== 1) c = Math.fround(Math.min(FLOAT32_MAX, Math.max(-FLOAT32_MAX, c / t)));
    return c;
  });
  const max = l.reduce((a, b) => (b > a ? b : a), -Infinity);
  const e = l.map((v) => Math.exp(v - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

function atLevel<T>(level: 'generic' | 'avx2' | 'best', f: () => T): T {
  native().setKernelLevel(level);
  try {
    return f();
  } finally {
    native().setKernelLevel('best');
  }
}

afterAll(() => native().setKernelLevel('best'));

describe('softmax', () => {
  it('matches a double-precision softmax to float precision, and the SIMD bits equal the scalar ones', () => {
    for (const n of [1, 7, 8, 9, 100, 32000, 151936]) {
      const x = row(n, n, 30);
      const probs = new Float64Array(n);
      native().softmax(x, n, probs);
      const want = softmaxDouble(x);
      let worst = 0;
      for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(probs[i]! - want[i]!) / want[i]!);
      expect(worst, `n ${n}`).toBeLessThan(1e-5);
      expect(probs.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
      for (const level of ['generic', 'avx2'] as const) {
        const other = new Float64Array(n);
        atLevel(level, () => native().softmax(x, n, other));
        expect(Buffer.from(other.buffer).equals(Buffer.from(probs.buffer)), `${level}, n ${n}`).toBe(true);
      }
    }
  });

  it('takes only the first n values and refuses n past either array', () => {
    const probs = new Float64Array(4).fill(-1);
    native().softmax(new Float32Array([0, 0, 5, 5]), 2, probs);
    expect(Array.from(probs)).toEqual([0.5, 0.5, -1, -1]);
    expect(() => native().softmax(new Float32Array(2), 3, new Float64Array(3))).toThrow(RangeError);
    expect(() => native().softmax(new Float32Array(3), 3, new Float64Array(2))).toThrow(RangeError);
  });
});

describe('softmaxDraw', () => {
  const draw = (x: Float32Array, t: number, u: number) => native().softmaxDraw(x.slice(), t, u);

  it('draws each token as often as its probability (u on a fine grid)', () => {
    for (const [n, t] of [[5, 1], [37, 0.7], [300, 1.5]] as const) {
      const x = row(n + 1, n, 6);
      const want = softmaxDouble(x, t);
      const counts = new Array<number>(n).fill(0);
      const grid = 20000;
      for (let k = 0; k < grid; k++) counts[draw(x, t, (k + 0.5) / grid)]!++;
      for (let i = 0; i < n; i++) expect(Math.abs(counts[i]! / grid - want[i]!), `n ${n}, t ${t}, token ${i}`).toBeLessThan(1.5 / grid + 1e-6);
    }
  });

  it('walks the tokens in id order: the first token with mass at u = 0, the last one near 1', () => {
    const x = new Float32Array([-Infinity, 2, 1, 3, -Infinity]);
    expect(draw(x, 1, 0)).toBe(1);
    expect(draw(x, 1, 1 - 2 ** -53)).toBe(3);
  });

  it('clamps as the candidates do: +inf takes all the mass, NaN and -inf none, an all-banned row is uniform', () => {
    const r = prng(3);
    const withInf = row(4, 64);
    withInf[40] = Infinity;
    withInf[10] = NaN;
    for (let k = 0; k < 50; k++) expect(draw(withInf, 1, r.next())).toBe(40);
    const banned = new Float32Array(10).fill(-Infinity);
    expect(draw(banned, 1, 0.05)).toBe(0);
    expect(draw(banned, 1, 0.95)).toBe(9);
    const nan = new Float32Array(4).fill(NaN);
    expect(draw(nan, 0.5, 0.3)).toBe(1);
  });

  it('gives the scalar definition\'s token at every SIMD level, rows of every length mod 8', () => {
    const r = prng(9);
    for (const n of [1, 3, 8, 13, 64, 1001, 32000, 151936]) {
      const x = row(100 + n, n, 24);
      if (n > 10) {
        x[5] = NaN;
        x[6] = -Infinity;
      }
      for (const t of [1, 0.6, 1.7]) {
        for (let k = 0; k < 20; k++) {
          const u = r.next();
          const want = atLevel('generic', () => draw(x, t, u));
          expect(atLevel('avx2', () => draw(x, t, u)), `n ${n}, t ${t}, u ${u}`).toBe(want);
          expect(draw(x, t, u), `n ${n}, t ${t}, u ${u}`).toBe(want);
        }
      }
    }
  });

  it('refuses a bad temperature, u outside [0, 1) and an empty row', () => {
    expect(() => native().softmaxDraw(new Float32Array(3), 0, 0.5)).toThrow(RangeError);
    expect(() => native().softmaxDraw(new Float32Array(3), Infinity, 0.5)).toThrow(RangeError);
    expect(() => native().softmaxDraw(new Float32Array(3), 1, 1)).toThrow(RangeError);
    expect(() => native().softmaxDraw(new Float32Array(3), 1, -0.1)).toThrow(RangeError);
    expect(() => native().softmaxDraw(new Float32Array(0), 1, 0.5)).toThrow(RangeError);
  });
});

describe('topK', () => {
  it('selects what reset and the JS heap select, in the same order (ties, NaN, infinities)', () => {
    const r = prng(21);
    for (const n of [1, 2, 40, 41, 1000, 151936]) {
      // Few distinct values: ties everywhere, broken toward the lower id.
      const x = Float32Array.from({ length: n }, () => Math.floor(r.next() * 50) / 4);
      for (let i = 0; i < n; i += 97) x[i] = [NaN, Infinity, -Infinity, 1e30][(i / 97) % 4]!;
      for (const k of [1, 5, 40, n]) {
        if (k > n) continue;
        const c = new Candidates(n);
        c.reset(x);
        selectTop(c, k);
        const ids = new Int32Array(k), out = new Float32Array(k);
        native().topK(x, k, ids, out);
        expect(Array.from(ids), `n ${n}, k ${k}`).toEqual(Array.from(c.scratchIds.subarray(0, k)));
        expect(Array.from(out), `n ${n}, k ${k}`).toEqual(Array.from(c.scratchLogits.subarray(0, k)));
      }
    }
  });

  it('refuses k outside 1..n and outputs shorter than k', () => {
    expect(() => native().topK(new Float32Array(4), 0, new Int32Array(4), new Float32Array(4))).toThrow(RangeError);
    expect(() => native().topK(new Float32Array(4), 5, new Int32Array(5), new Float32Array(5))).toThrow(RangeError);
    expect(() => native().topK(new Float32Array(4), 3, new Int32Array(2), new Float32Array(3))).toThrow(RangeError);
  });
});

describe('nucleus', () => {
  /** A row with a few dozen tokens far above a noisy floor, as a model's next-token logits are. */
  function peaked(seed: number, n: number): Float32Array {
    const r = prng(seed);
    const x = Float32Array.from({ length: n }, () => (r.next() + r.next() + r.next() - 1.5) * 5 - 2);
    for (let k = 0; k < 30; k++) x[Math.floor(r.next() * n)] = 10 + Math.floor(r.next() * 8);
    return x;
  }

  it('keeps the tokens reset and top-p keep, best first, ties at the cut to the lower id', () => {
    for (const [seed, n] of [[1, 300], [2, 32000], [3, 151936]] as const) {
      const x = peaked(seed, n);
      x[5] = NaN;
      for (const p of [0.5, 0.9, 0.95, 0.99]) {
        const c = new Candidates(n);
        c.reset(x);
        topP(c, p);
        const want = Array.from(c.ids.subarray(0, c.size)).sort((a, b) => a - b);
        const ids = new Int32Array(512), out = new Float32Array(512);
        const k = native().nucleus(x, p, Math.min(512, n), ids, out);
        expect(k, `n ${n}, p ${p}`).toBe(want.length);
        expect(Array.from(ids.subarray(0, k)).sort((a, b) => a - b), `n ${n}, p ${p}`).toEqual(want);
        for (let j = 1; j < k; j++) expect(out[j - 1]! > out[j]! || (out[j - 1] === out[j] && ids[j - 1]! < ids[j]!)).toBe(true);
      }
    }
    // Four equal logits and p = 0.5: the two lower ids.
    const ids = new Int32Array(4), out = new Float32Array(4);
    expect(native().nucleus(new Float32Array([-Infinity, 3, 3, 3, 3]), 0.5, 4, ids, out)).toBe(2);
    expect(Array.from(ids.subarray(0, 2))).toEqual([1, 2]);
  });

  it('gives -1 when the nucleus needs more than maxK tokens, and refuses p outside (0, 1)', () => {
    const flat = new Float32Array(5000);
    expect(native().nucleus(flat, 0.9, 512, new Int32Array(512), new Float32Array(512))).toBe(-1);
    expect(() => native().nucleus(flat, 1, 512, new Int32Array(512), new Float32Array(512))).toThrow(RangeError);
    expect(() => native().nucleus(flat, 0.5, 512, new Int32Array(10), new Float32Array(512))).toThrow(RangeError);
  });
});

describe('keepAtLeast (min-p from the row)', () => {
  it('keeps what reset and min-p keep, in id order', () => {
    const r = prng(31);
    for (const n of [1, 9, 1000, 151936]) {
      const x = Float32Array.from({ length: n }, () => Math.floor(r.next() * 64) / 4 - 8);
      if (n > 9) {
        x[3] = NaN;
        x[7] = -Infinity;
      }
      for (const p of [0.01, 0.05, 0.5, 1]) {
        const want = new Candidates(n);
        want.reset(x);
        minP(want, p);
        const got = new Candidates(n);
        got.resetToMinP(x, p);
        expect(got.size, `n ${n}, p ${p}`).toBe(want.size);
        expect(Array.from(got.ids.subarray(0, got.size))).toEqual(Array.from(want.ids.subarray(0, want.size)));
        expect(Array.from(got.logits.subarray(0, got.size))).toEqual(Array.from(want.logits.subarray(0, want.size)));
      }
    }
    // +Infinity clamps to the largest float: only it is within ln(p) of itself.
    const c = new Candidates(4);
    c.resetToMinP(new Float32Array([1, Infinity, 2, NaN]), 0.05);
    expect(Array.from(c.ids.subarray(0, c.size))).toEqual([1]);
  });
});

describe('argmax', () => {
  it('gives the scalar definition\'s index at every SIMD level', () => {
    for (const n of [1, 5, 16, 17, 151936]) {
      const x = row(7 + n, n);
      const want = atLevel('generic', () => native().argmax(x));
      expect(atLevel('avx2', () => native().argmax(x))).toBe(want);
      expect(native().argmax(x)).toBe(want);
    }
  });
});
