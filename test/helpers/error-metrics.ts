// How far a kernel's output is from its reference, as the numbers test/kernels/tolerances.ts bounds.

function rms(values: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i]! * values[i]!;
  return Math.sqrt(sum / Math.max(1, values.length));
}

/** Largest absolute difference, relative to the reference's root mean square. */
export function maxRelError(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  if (actual.length !== expected.length) throw new Error(`length ${actual.length} != ${expected.length}`);
  let max = 0;
  for (let i = 0; i < actual.length; i++) max = Math.max(max, Math.abs(actual[i]! - expected[i]!));
  const scale = rms(expected);
  return scale > 0 ? max / scale : max;
}

/** Root mean square of the difference, relative to the reference's root mean square. */
export function rmsRelError(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  if (actual.length !== expected.length) throw new Error(`length ${actual.length} != ${expected.length}`);
  const diff = Array.from(actual, (v, i) => v - expected[i]!);
  const scale = rms(expected);
  return scale > 0 ? rms(diff) / scale : rms(diff);
}

/** Index of the first element where the two differ (NaN equals NaN, 0 differs from -0), or -1. */
export function firstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) {
    if (!Object.is(a[i], b[i]) && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return i;
  }
  return -1;
}
