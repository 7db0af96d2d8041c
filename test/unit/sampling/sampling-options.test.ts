import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../../src/errors.js';
import { DEFAULT_REPEAT_LAST_N, resolveSamplingOptions, type SamplingOptions } from '../../../src/sampling/sampling-options.js';

function errorOf(options: unknown): InvalidArgumentError {
  try {
    resolveSamplingOptions(options as SamplingOptions);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidArgumentError);
    return e as InvalidArgumentError;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

describe('resolveSamplingOptions', () => {
  it('fills neutral defaults', () => {
    const o = resolveSamplingOptions({ seed: 3 });
    expect(o).toMatchObject({
      temperature: 1, topK: 0, topP: 1, minP: 0, repeatPenalty: 1, repeatLastN: DEFAULT_REPEAT_LAST_N,
      presencePenalty: 0, frequencyPenalty: 0, seed: 3,
    });
    expect(DEFAULT_REPEAT_LAST_N).toBe(64);
    expect(o.logitBias.ids.length).toBe(0);
  });

  it('picks a random integer seed when none is given', () => {
    expect(Number.isSafeInteger(resolveSamplingOptions().seed)).toBe(true);
  });

  it('accepts the edges of every range', () => {
    expect(() => resolveSamplingOptions({
      temperature: 0, topK: 0, topP: 1, minP: 1, repeatPenalty: 0.5, repeatLastN: -1,
      presencePenalty: -2, frequencyPenalty: 2, seed: -5, logitBias: { 0: -Infinity, 12: 100 },
    })).not.toThrow();
    expect(() => resolveSamplingOptions({ topP: 1e-6, minP: 0 })).not.toThrow();
  });

  it.each([
    ['temperature', -0.1], ['temperature', NaN], ['temperature', Infinity], ['temperature', '1'],
    ['topK', -1], ['topK', 2.5],
    ['topP', 0], ['topP', 1.01], ['topP', -1], ['topP', NaN],
    ['minP', -0.1], ['minP', 1.5],
    ['repeatPenalty', 0], ['repeatPenalty', -1], ['repeatPenalty', Infinity],
    ['repeatLastN', -2], ['repeatLastN', 1.5],
    ['presencePenalty', NaN], ['frequencyPenalty', -Infinity],
    ['seed', 1.5], ['seed', 2 ** 60],
  ])('rejects %s = %s, naming the field', (field, value) => {
    const e = errorOf({ [field]: value });
    expect(e.param).toBe(field);
    expect(e.status).toBe(400);
    expect(e.message).toContain(field);
  });

  it.each([
    [[1, 2]], ['x'], [{ '-1': 1 }], [{ abc: 1 }], [{ '1.5': 1 }], [{ '01': 1 }], [{ 1: NaN }], [{ 1: Infinity }], [{ 1: '2' }],
  ])('rejects logitBias %j', (bias) => {
    expect(errorOf({ logitBias: bias }).param).toBe('logitBias');
  });
});
