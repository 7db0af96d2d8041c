// Reference addition: residual adds (same shape) and bias adds (one row broadcast over rows).

/**
 * a: (rows, width); b: (rows, width) or (width). Returns a + b, with a one-row b added to every
 * row of a.
 */
export function add(a: Float32Array, b: Float32Array): Float32Array {
  if (b.length === 0 || a.length % b.length !== 0) {
    throw new RangeError(`add: b (${b.length} values) must match a (${a.length}) or one of its rows`);
  }
  return a.map((value, i) => value + b[i % b.length]);
}
