// Reference softmax over each row, in float64.

/** x: (rows, width). Returns exp(x - max) / sum(exp(x - max)) per row. */
export function softmax(x: Float32Array, rows: number, width: number): Float32Array {
  if (x.length !== rows * width) throw new RangeError(`softmax: x has ${x.length} values, expected ${rows} x ${width}`);
  const y = new Float32Array(x.length);
  for (let r = 0; r < rows; r++) {
    const row = x.subarray(r * width, (r + 1) * width);
    const max = row.reduce((m, v) => Math.max(m, v), -Infinity);
    const exps = Array.from(row, (v) => Math.exp(v - max));
    const sum = exps.reduce((s, e) => s + e, 0);
    exps.forEach((e, i) => (y[r * width + i] = e / sum));
  }
  return y;
}
