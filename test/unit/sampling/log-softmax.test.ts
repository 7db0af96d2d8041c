import { describe, expect, it } from 'vitest';
import { logSoftmax } from '../../../src/sampling/log-softmax.js';

describe('logSoftmax', () => {
  it('gives -ln 2 for two equal logits and ln(1/4), ln(3/4) for logits 0, ln 3', () => {
    const equal = logSoftmax(new Float32Array([5, 5]));
    expect(equal[0]).toBeCloseTo(-Math.LN2, 6);
    expect(equal[1]).toBeCloseTo(-Math.LN2, 6);
    const r = logSoftmax(new Float32Array([0, Math.log(3)]));
    expect(r[0]).toBeCloseTo(Math.log(0.25), 6);
    expect(r[1]).toBeCloseTo(Math.log(0.75), 6);
  });

  it('is stable for large logits and exponentiates to a distribution', () => {
    const r = logSoftmax(new Float32Array([1000, 1000, 990]));
    expect(r.every(Number.isFinite)).toBe(true);
    const total = Array.from(r).reduce((s, v) => s + Math.exp(v), 0);
    expect(total).toBeCloseTo(1, 6);
    expect(r[0]).toBeCloseTo(-Math.log(2 + Math.exp(-10)), 5);
  });

  it('keeps banned tokens at -Infinity', () => {
    const r = logSoftmax(new Float32Array([0, -Infinity]));
    expect(r[0]).toBeCloseTo(0, 6);
    expect(r[1]).toBe(-Infinity);
  });
});
