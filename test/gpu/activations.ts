// What the WebGPU (and CPU) matrix kernels multiply: each token's activations after conversion to
// the weight type's dot-product partner, as plain floats for src/reference/mat-mul.ts.
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { dequantize, floatToFp16, fp16ToFloat, quantize } from '../../src/reference/quantize.js';

const f = Math.fround;

/** Half to even, as nearbyint in the default rounding mode. */
function roundEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v - Math.trunc(v)) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Q8_0 blocks as llama.cpp's x86 activation quantizer makes them: x * (127 / amax), half to even. */
function q8_0Activations(x: Float32Array): Float32Array {
  const y = new Float32Array(x.length);
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b + j]!));
    const id = amax !== 0 ? f(127 / amax) : 0;
    const d = fp16ToFloat(floatToFp16(f(amax / 127)));
    for (let j = 0; j < 32; j++) {
      const v = f(x[b + j]! * id);
      y[b + j] = f((v > -127 ? (v < 127 ? roundEven(v) : 127) : -127) * d);
    }
  }
  return y;
}

export function activationsAsSeen(type: GgmlType, x: Float32Array, cols: number): Float32Array {
  const seen = new Float32Array(x.length);
  for (let t = 0; t < x.length / cols; t++) {
    const row = x.subarray(t * cols, (t + 1) * cols);
    let converted: Float32Array;
    switch (type) {
      case GgmlType.F32: converted = row; break;
      case GgmlType.F16:
      case GgmlType.BF16: converted = dequantize(type, quantize(type, row), cols); break;
      case GgmlType.Q8_0:
      case GgmlType.Q4_0: converted = q8_0Activations(row); break;
      default: converted = dequantize(GgmlType.Q8_K, quantize(GgmlType.Q8_K, row), cols);
    }
    seen.set(converted, t * cols);
  }
  return seen;
}
