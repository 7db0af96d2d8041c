// Seeded fuzzing of the reader on the shared models: every mutated or truncated file parses into
// a consistent file or throws a KilnError subclass. `npm run bench -- gguf-fuzz` runs longer.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fuzzGguf, loadFuzzInputs } from '../../bench/gguf-fuzz.js';
import { MODELS } from '../helpers/paths.js';

describe.skipIf(!existsSync(MODELS))('GGUF reader fuzz', () => {
  it('lets nothing but KilnError subclasses escape in 3000 mutations', () => {
    const result = fuzzGguf(loadFuzzInputs(MODELS), 3000, 20240601);
    expect(result.escapes).toEqual([]);
    // The mutations reach deep enough to trip the tensor checks, not only the header's.
    expect(result.errors.get('GgufTruncatedError')).toBeGreaterThan(0);
    expect(result.errors.get('GgufTensorOutOfBoundsError')).toBeGreaterThan(0);
    expect(result.errors.get('GgufDimensionError')).toBeGreaterThan(0);
    expect(result.parsed).toBeGreaterThan(0);
  });
});
