import { describe, expect, it } from 'vitest';
import { greedy } from '../../../src/sampling/greedy.js';

describe('greedy', () => {
  it('returns the index of the largest logit', () => {
    expect(greedy(new Float32Array([0.1, -2, 3.5, 3.4]))).toBe(2);
    expect(greedy([-5, -1, -3])).toBe(1);
  });

  it('breaks ties toward the lowest index', () => {
    expect(greedy(new Float32Array([1, 7, 2, 7, 7]))).toBe(1);
    expect(greedy(new Float32Array([-Infinity, -Infinity]))).toBe(0);
  });

  it('never picks NaN', () => {
    expect(greedy(new Float32Array([NaN, -100, NaN]))).toBe(1);
    expect(greedy(new Float32Array([NaN, NaN]))).toBe(0);
  });

  it('throws on an empty row', () => {
    expect(() => greedy(new Float32Array(0))).toThrow(RangeError);
  });
});
