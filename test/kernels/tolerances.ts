// Every tolerance of the kernel tests, in one place, each with the reason for its size.
// Metrics are in test/helpers/error-metrics.ts: maxRelError = max |actual - expected| / rms(expected),
// rmsRelError = rms(actual - expected) / rms(expected).
export const TOLERANCES = {
  /** rmsRelError of quantize -> dequantize on N(0, 1) values: about 10% above what the reference
   *  quantizers achieve (measured over 8 seeds), so a worse quantizer fails. */
  roundTrip: {
    f32: 0,
    f16: 2.5e-4,
    bf16: 2e-3,
    q8_0: 6.5e-3,
    q4_0: 0.095,
    q4_K: 0.08,
    q5_K: 0.041,
    q6_K: 0.02,
    q8_K: 8.5e-3,
  } as Record<string, number>,
  /** maxRelError of the generic mulMat against the reference on the same operands (weights and
   *  activations both dequantized). Integer block sums are exact and the float types sum in double
   *  as the reference does; only the float accumulation of block results differs (measured 7e-7
   *  at 512 columns). */
  mulMatSameOperands: 1e-5,
  /** maxRelError of the generic mulMat against the reference with float activations: what
   *  rounding activations to the vecDotType costs (llama.cpp pays the same). Measured maxima over
   *  67 rows x up to 33 tokens: f16 8e-4, bf16 6.4e-3, q8_0 2.7e-2, q8_K 3.1e-2. */
  mulMatActivations: { f32: 1e-6, f16: 1.5e-3, bf16: 1e-2, q8_0: 3.5e-2, q8_K: 4e-2 } as Record<string, number>,
  /** maxRelError of the best kernels against the generic ones: the same integer sums, float
   *  accumulation in another order and in single precision (measured 1.5e-6). Q8_0 and Q4_0 are
   *  held to equality instead: both sum in llama.cpp's x86 order, as the references were made. */
  mulMatBestVsGeneric: 1e-5,
};

/** maxRelError of the native non-matmul ops against src/reference (which accumulates in float64). */
export const OP_TOLERANCES = {
  /** float32 sum of squares vs float64: rounding only. */
  rmsNorm: 1e-5,
  /** Native angles are built by repeated float32 multiplication as ggml does; at position 3000
   *  the angle's float32 rounding moves the result by ~1e-4 of the row scale. */
  rope: 2e-3,
  /** float32 softmax and weighted sums vs float64. */
  attention: 1e-5,
  /** float32 expf vs Math.exp, and float32 vs float64 dot products of length 40. */
  elementwise: 1e-5,
};

/** Largest |logprob - llama.cpp's logprob| over the reference top-10 (../shared/models/README.md). */
export const MODEL_LOGPROB_TOLERANCE = {
  /** F32 and F16 weights. */
  float: 0.01,
  /** Q8_0 and Q4_0 weights (activations quantized to Q8 blocks, as llama.cpp does). */
  quantized: 0.05,
};

/** maxRelError of the WebGPU kernels (test/gpu) against src/reference. */
export const WEBGPU_TOLERANCES = {
  /** Dequantized exactly as the reference; a K-quant's d * q - m may be fused into one multiply-add. */
  getRows: 1e-6,
  /** float32 tree sum of squares vs float64. */
  rmsNorm: 1e-5,
  /** float32 softmax and weighted sums in the CPU backend's order (the kernels compute its bits)
   *  vs float64. */
  attention: 1e-5,
  /** float32 exp (ggml's and glibc's, as on the CPU) and float32 dot products vs float64. */
  elementwise: 1e-5,
  /** Against the reference on the activations as the kernels see them (rounded to fp16/bf16 or
   *  quantized to Q8_0/Q8_K, exactly as the CPU does): integer block sums are exact, only the
   *  float32 accumulation of unit results differs (in the CPU backend's order). Measured below
   *  2e-6 at 512 columns. */
  mulMatSameOperands: 1e-5,
};

/** maxRelError of the CUDA kernels (test/gpu/cuda-*.test.ts) against src/reference. */
export const CUDA_TOLERANCES = {
  /** float32 tree sum of squares vs float64. */
  rmsNorm: 1e-5,
  /** float32 online softmax over tiles of 32 positions, split across blocks for decode, vs float64. */
  attention: 1e-5,
  /** CUDA expf is within 2 ulp; float32 vs float64. */
  elementwise: 1e-5,
  /** Against the reference on the operands as the kernels see them (int8 activation blocks of 32
   *  with an fp16 scale for quantized weights; fp16/bf16 weights and row-scaled activations on the
   *  F16/BF16 tensor cores): integer block sums are exact, only float32 accumulation order differs. */
  mulMatSameOperands: 1e-5,
  /** float32 products summed in float32 (float weights in decode and the F32 tiles) vs float64. */
  mulMatFloat: 1e-5,
  /** Quantized weights against float activations: int8 blocks of 32 with an fp16 scale, as the CPU's
   *  Q8_0 activations (TOLERANCES.mulMatActivations.q8_0); K-quants get those finer blocks too. */
  mulMatQ8: 3.5e-2,
  /** F16 weights on tensor cores against float activations, which are divided by their row's largest
   *  magnitude and rounded to fp16. The rounding replayed in TS over 8 seeds (67 rows x 512 columns
   *  x 70 tokens) gave at most 1.0e-3. */
  mulMatHalf: 2e-3,
  /** As mulMatHalf for BF16 weights, whose activations are rounded to bf16: replayed maximum 7.8e-3. */
  mulMatBf16: 1.2e-2,
};

/** Largest |logprob - llama.cpp's logprob| over the reference top-10 for the CUDA backend. */
export const CUDA_MODEL_LOGPROB_TOLERANCE = {
  /** F32 and F16 weights: as MODEL_LOGPROB_TOLERANCE.float (0.006 measured with the kernels run
   *  under CPU emulation). */
  float: 0.01,
  /** Q8_0 and Q4_0 weights. The CUDA kernels sum products and attention in their own order, not
   *  llama.cpp's, and on the tiny random models (tiny-llama-q4_0's RMS-normed embedding rows put
   *  activations on int8 half-steps) that moves log-probabilities by up to 0.048 under CPU
   *  emulation of the kernels; the rest is room for the GPU's own expf, sinf and cosf. */
  quantized: 0.08,
};
