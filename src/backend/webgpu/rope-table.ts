// The cos and sin of every RoPE angle of a step, computed on the host as ggml computes them in
// float32 (native/cpu/ops.cpp ropeRows): theta_i = freqScale * (pos * thetaScale^i / factor_i), the
// powers built by repeated float32 multiplication. GPU sin/cos are only required to be accurate
// to 2^-11 and lose more at the large angles of late positions; the table keeps the GPU path equal
// to the CPU one.
const f = Math.fround;

export interface RopeAngles {
  nRot: number;
  freqBase: number;
  freqScale: number;
  freqFactors?: Float32Array;
}

/** Writes (cos, sin) pairs, (positions, nRot / 2), into `out`. */
export function ropeTable(positions: Int32Array, n: number, a: RopeAngles, out: Float32Array): void {
  const half = a.nRot / 2;
  const thetaScale = f(Math.pow(f(a.freqBase), f(-2 / a.nRot)));
  const scale = f(a.freqScale);
  for (let t = 0; t < n; t++) {
    let thetaBase = f(positions[t]!);
    for (let i = 0; i < half; i++) {
      const theta = f(scale * f(thetaBase / (a.freqFactors ? a.freqFactors[i]! : 1)));
      out[2 * (t * half + i)] = Math.cos(theta);
      out[2 * (t * half + i) + 1] = Math.sin(theta);
      thetaBase = f(thetaBase * thetaScale);
    }
  }
}
