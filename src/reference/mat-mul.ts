// y (nTokens, rows) = x (nTokens, cols) * W^T with W (rows, cols) in plain floats: the reference for
// the native mulMat. Sums in double, so its own rounding is negligible next to any kernel's.

export function matMul(w: Float32Array, rows: number, cols: number, x: Float32Array, nTokens: number): Float32Array {
  if (w.length !== rows * cols) throw new RangeError(`W has ${w.length} values; ${rows} x ${cols} expected`);
  if (x.length !== nTokens * cols) throw new RangeError(`x has ${x.length} values; ${nTokens} x ${cols} expected`);
  const y = new Float32Array(nTokens * rows);
  for (let t = 0; t < nTokens; t++) {
    for (let r = 0; r < rows; r++) {
      let sum = 0;
      for (let c = 0; c < cols; c++) sum += w[r * cols + c]! * x[t * cols + c]!;
      y[t * rows + r] = sum;
    }
  }
  return y;
}
