// Seeded random float inputs for kernel tests.
import type { Prng } from './prng.js';

/** A standard normal value (Box-Muller). */
export function gaussian(r: Prng): number {
  const u = 1 - r.next(); // (0, 1]: log stays finite
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r.next());
}

/** n values of N(0, scale^2). */
export function gaussians(r: Prng, n: number, scale = 1): Float32Array {
  return Float32Array.from({ length: n }, () => gaussian(r) * scale);
}
