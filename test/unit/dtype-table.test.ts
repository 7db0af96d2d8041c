// The TS dtype table (src/gguf/ggml-type.ts) against the native type traits table.
import { describe, expect, it } from 'vitest';
import { native } from '../../src/native/binding.js';
import { GGML_TYPES, GgmlType } from '../../src/gguf/ggml-type.js';

describe('dtype table', () => {
  const nativeRows = native().typeTable();

  it('every native type has the same name, block size, type size and weight flag in TS', () => {
    for (const row of nativeRows) {
      const info = GGML_TYPES[row.type as GgmlType];
      expect(info, `native type ${row.type} is missing from GGML_TYPES`).toBeDefined();
      expect({ name: row.name, blockSize: row.blockSize, typeSize: row.typeSize, isWeightType: row.isWeightType }).toEqual(info);
    }
  });

  it('the native table computes with every TS weight type and every activation type they need', () => {
    const weightTypes = Object.entries(GGML_TYPES)
      .filter(([, info]) => info.isWeightType)
      .map(([type]) => Number(type));
    const nativeTypes = nativeRows.map((row) => row.type);
    expect(nativeTypes).toEqual(expect.arrayContaining(weightTypes));
    for (const row of nativeRows) expect(nativeTypes).toContain(row.vecDotType);
  });

  it("activations meet weights in llama.cpp's vecDotTypes", () => {
    const vecDot = Object.fromEntries(nativeRows.filter((r) => r.isWeightType).map((r) => [GGML_TYPES[r.type as GgmlType].name, GGML_TYPES[r.vecDotType as GgmlType].name]));
    expect(vecDot).toEqual({ f32: 'f32', f16: 'f16', bf16: 'bf16', q8_0: 'q8_0', q4_0: 'q8_0', q4_K: 'q8_K', q5_K: 'q8_K', q6_K: 'q8_K' });
  });
});
