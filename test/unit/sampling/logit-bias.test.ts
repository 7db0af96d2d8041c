import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../../src/errors.js';
import { logitBias, toLogitBiasTable } from '../../../src/sampling/logit-bias.js';

describe('logitBias', () => {
  it('adds each bias to its token', () => {
    const row = new Float32Array([1, 1, 1, 1]);
    logitBias(row, toLogitBiasTable({ 1: 2.5, 3: -1 }));
    expect(Array.from(row)).toEqual([1, 3.5, 1, 0]);
  });

  it('bans a token with -Infinity', () => {
    const row = new Float32Array([1, 1]);
    logitBias(row, toLogitBiasTable({ 0: -Infinity }));
    expect(Array.from(row)).toEqual([-Infinity, 1]);
  });

  it('rejects a token id outside the vocabulary, naming logitBias', () => {
    const table = toLogitBiasTable({ 7: 1 });
    try {
      logitBias(new Float32Array(4), table);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidArgumentError);
      expect((e as InvalidArgumentError).param).toBe('logitBias');
      expect((e as Error).message).toMatch(/token 7.*4 tokens/);
    }
  });
});
