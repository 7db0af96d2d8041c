// What the WebGPU (and CPU) matrix kernels multiply: each token's activations after conversion to
// the weight type's dot-product partner, as plain floats for src/reference/mat-mul.ts.
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { dequantize, quantizeActivations } from '../../src/reference/quantize.js';

const PARTNER: Partial<Record<GgmlType, GgmlType>> = {
  [GgmlType.F16]: GgmlType.F16,
  [GgmlType.BF16]: GgmlType.BF16,
  [GgmlType.Q8_0]: GgmlType.Q8_0,
  [GgmlType.Q4_0]: GgmlType.Q8_0,
  [GgmlType.Q4_K]: GgmlType.Q8_K,
  [GgmlType.Q5_K]: GgmlType.Q8_K,
  [GgmlType.Q6_K]: GgmlType.Q8_K,
};

export function activationsAsSeen(type: GgmlType, x: Float32Array, cols: number): Float32Array {
  const partner = PARTNER[type];
  if (partner === undefined) return x;
  const seen = new Float32Array(x.length);
  for (let t = 0; t < x.length / cols; t++) {
    const row = x.subarray(t * cols, (t + 1) * cols);
    seen.set(dequantize(partner, quantizeActivations(partner, row), cols), t * cols);
  }
  return seen;
}
