import { describe, expect, it } from 'vitest';
import { rope, type RopeOptions } from '../../../src/reference/rope.js';
import { prng } from '../../helpers/prng.js';

const f32 = (...v: number[]): Float32Array => Float32Array.from(v);
const i32 = (...v: number[]): Int32Array => Int32Array.from(v);
const close = (values: number[]) => values.map((v) => expect.closeTo(v, 6));
const normal: RopeOptions = { nRot: 2, mode: 'normal', freqBase: 10000, freqScale: 1 };

describe('rope', () => {
  it('is the identity at position 0 in both modes', () => {
    const rng = prng(1);
    const x = Float32Array.from({ length: 2 * 3 * 8 }, () => rng.next() - 0.5);
    for (const mode of ['normal', 'neox'] as const) {
      const y = rope(x, 2, 3, 8, i32(0, 0), { nRot: 8, mode, freqBase: 10000, freqScale: 1 });
      expect(Array.from(y)).toEqual(Array.from(x));
    }
  });

  it('turns the first pair by pos * freqScale radians: a 2x2 rotation', () => {
    // theta_0 = 1 * 1 * base^0 = 1
    expect(Array.from(rope(f32(1, 0), 1, 1, 2, i32(1), normal))).toEqual(close([Math.cos(1), Math.sin(1)]));
    // (0, 1) at theta = 3 * 0.5 = 1.5 -> (-sin 1.5, cos 1.5)
    const y = rope(f32(0, 1), 1, 1, 2, i32(3), { ...normal, freqScale: 0.5 });
    expect(Array.from(y)).toEqual(close([-Math.sin(1.5), Math.cos(1.5)]));
  });

  it('normal mode rotates adjacent pairs with theta_i = p * base^(-2i/nRot)', () => {
    // base 100, nRot 4: pair 1 turns by p * 100^(-1/2) = p / 10
    const y = rope(f32(1, 0, 1, 0), 1, 1, 4, i32(1), { nRot: 4, mode: 'normal', freqBase: 100, freqScale: 1 });
    expect(Array.from(y)).toEqual(close([Math.cos(1), Math.sin(1), Math.cos(0.1), Math.sin(0.1)]));
  });

  it('neox mode rotates (x[i], x[i + nRot/2])', () => {
    // pairs (0, 2) at theta 1 and (1, 3) at theta 0.1
    const y = rope(f32(1, 1, 0, 0), 1, 1, 4, i32(1), { nRot: 4, mode: 'neox', freqBase: 100, freqScale: 1 });
    expect(Array.from(y)).toEqual(close([Math.cos(1), Math.cos(0.1), Math.sin(1), Math.sin(0.1)]));
  });

  it('leaves dimensions past nRot unchanged', () => {
    for (const mode of ['normal', 'neox'] as const) {
      const y = rope(f32(1, 0, 7, -7), 1, 1, 4, i32(2), { nRot: 2, mode, freqBase: 10000, freqScale: 1 });
      expect(Array.from(y)).toEqual(close([Math.cos(2), Math.sin(2), 7, -7]));
    }
  });

  it('divides pair i\'s angle by freqFactors[i]', () => {
    const y = rope(f32(1, 0, 1, 0), 1, 1, 4, i32(2), {
      nRot: 4, mode: 'normal', freqBase: 100, freqScale: 1, freqFactors: f32(4, 0.5),
    });
    // pair 0: 2 / 4 = 0.5; pair 1: (2 / 10) / 0.5 = 0.4
    expect(Array.from(y)).toEqual(close([Math.cos(0.5), Math.sin(0.5), Math.cos(0.4), Math.sin(0.4)]));
  });

  it('uses each token\'s own position and the same rotation for every head', () => {
    const y = rope(f32(1, 0, 1, 0, 1, 0, 1, 0), 2, 2, 2, i32(5, 0), normal);
    expect(Array.from(y)).toEqual(close([Math.cos(5), Math.sin(5), Math.cos(5), Math.sin(5), 1, 0, 1, 0]));
  });

  it('preserves each pair\'s length and composes: p then q equals p + q', () => {
    const rng = prng(3);
    const x = Float32Array.from({ length: 16 }, () => rng.next() - 0.5);
    const options: RopeOptions = { nRot: 16, mode: 'neox', freqBase: 10000, freqScale: 1 };
    const once = rope(x, 1, 1, 16, i32(7), options);
    const twice = rope(rope(x, 1, 1, 16, i32(3), options), 1, 1, 16, i32(4), options);
    expect(Array.from(twice)).toEqual(Array.from(once).map((v) => expect.closeTo(v, 5)));
    for (let i = 0; i < 8; i++) expect(Math.hypot(once[i], once[i + 8])).toBeCloseTo(Math.hypot(x[i], x[i + 8]), 6);
  });

  it('rejects bad shapes', () => {
    expect(() => rope(f32(1, 2, 3), 1, 1, 2, i32(0), normal)).toThrow(RangeError);
    expect(() => rope(f32(1, 2), 1, 1, 2, i32(0, 1), normal)).toThrow(RangeError);
    expect(() => rope(f32(1, 2), 1, 1, 2, i32(0), { ...normal, nRot: 3 })).toThrow(RangeError);
    expect(() => rope(f32(1, 2, 3, 4), 1, 1, 4, i32(0), { ...normal, nRot: 4, freqFactors: f32(1) })).toThrow(RangeError);
  });
});
