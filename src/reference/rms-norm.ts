// Reference RMSNorm (ggml_rms_norm followed by the weight multiply), in float64.

/**
 * x: (rows, width), normalized per row: y = x / sqrt(mean(x^2) + eps) * weight.
 * weight: (width). For Q/K norm the caller passes rows = nTokens * nHeads and width = headDim.
 * Returns y: (rows, width).
 */
export function rmsNorm(x: Float32Array, weight: Float32Array, rows: number, width: number, eps: number): Float32Array {
  if (x.length !== rows * width) throw new RangeError(`rmsNorm: x has ${x.length} values, expected ${rows} x ${width}`);
  if (weight.length !== width) throw new RangeError(`rmsNorm: weight has ${weight.length} values, expected ${width}`);
  const y = new Float32Array(x.length);
  for (let r = 0; r < rows; r++) {
    let sumSquares = 0;
    for (let i = 0; i < width; i++) sumSquares += x[r * width + i] ** 2;
    const scale = 1 / Math.sqrt(sumSquares / width + eps);
    for (let i = 0; i < width; i++) y[r * width + i] = x[r * width + i] * scale * weight[i];
  }
  return y;
}
