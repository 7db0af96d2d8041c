// The sampler's seeded random source: xoshiro128** (Blackman & Vigna) seeded through SplitMix64.
// Pure 32-bit integer arithmetic, so one seed gives one sequence on every platform and Node version.

const MASK64 = (1n << 64n) - 1n;

export class Prng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  /** `seed` is any safe integer; negative seeds are taken as their 64-bit two's complement. */
  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`Prng seed must be a safe integer, got ${seed}`);
    // SplitMix64 spreads any seed, including 0, over the whole state, which must not be all zero.
    let x = BigInt.asUintN(64, BigInt(seed));
    const splitMix64 = (): bigint => {
      x = (x + 0x9e3779b97f4a7c15n) & MASK64;
      let z = x;
      z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
      z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
      return z ^ (z >> 31n);
    };
    const a = splitMix64();
    const b = splitMix64();
    this.s0 = Number(a & 0xffffffffn);
    this.s1 = Number(a >> 32n);
    this.s2 = Number(b & 0xffffffffn);
    this.s3 = Number(b >> 32n);
  }

  /** A generator with this exact state (for known-answer tests and resuming a saved stream). */
  static fromState(s0: number, s1: number, s2: number, s3: number): Prng {
    if ((s0 | s1 | s2 | s3) === 0) throw new RangeError('Prng state must not be all zero');
    const p = new Prng(0);
    p.s0 = s0 >>> 0;
    p.s1 = s1 >>> 0;
    p.s2 = s2 >>> 0;
    p.s3 = s3 >>> 0;
    return p;
  }

  /** The next 32-bit output, as an unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform in [0, 1) with 53 random bits, from two outputs. */
  nextFloat(): number {
    const hi = this.nextUint32() >>> 5; // 27 bits
    const lo = this.nextUint32() >>> 6; // 26 bits
    return (hi * 67108864 + lo) / 9007199254740992;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
