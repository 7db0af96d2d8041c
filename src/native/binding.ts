// The native addon's whole surface, typed. native/addon.cpp registers exactly these names.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeAddonError } from '../errors.js';

export interface CpuFeatures {
  avx2: boolean;
  fma: boolean;
  f16c: boolean;
  avx512f: boolean;
  /** AVX-512 F, BW, VL and VNNI: what kiln's AVX-512 kernels need. */
  avx512Vnni: boolean;
  avxVnni: boolean;
  neon: boolean;
  logicalCores: number;
  physicalCores: number;
}

export interface NativeTypeRow {
  type: number;
  name: string;
  blockSize: number;
  typeSize: number;
  vecDotType: number;
  isWeightType: boolean;
}

/** A tensor of a native graph. Tensors with `data` are constants (weights); the rest are activations. */
export interface NativeTensor {
  /** GgmlType of a constant; activations are F32. `-1` marks the token-id input (int32). */
  dtype: number;
  /** Elements per row. */
  cols: number;
  /** Rows of a constant. For activations: 0 = one row per token, -1 = one row per requested output. */
  rows: number;
  data?: ArrayBuffer;
  byteOffset?: number;
  /** For error messages and debugging. */
  name?: string;
}

export interface NativeNode {
  op: number;
  inputs: number[];
  output: number;
  params: number[];
}

export interface NativeGraph {
  tensors: NativeTensor[];
  nodes: NativeNode[];
  /** The tensor forward() copies into its output buffer. */
  output: number;
}

export interface NativePlanOptions {
  threads: number;
  /** Sequence slots, each with its own KV cache. */
  slots: number;
  /** Positions per slot. */
  contextSize: number;
  /** Most tokens per forward call. */
  maxBatch: number;
  /** GgmlType of the KV cache: F32 or F16. */
  kvType: number;
}

/** One label's totals: every layer's op of one kind shares a label ("mul_mat attn_q+attn_k+attn_v q4_0", "attention"). */
export interface OpTime {
  label: string;
  seconds: number;
  calls: number;
  /** Weight bytes its products read (the file's bytes of their weights, per call, summed); 0 for other ops. */
  weightBytes: number;
  /** Its products' multiply-adds x 2 (weights x activation rows), summed over calls; 0 for other ops. */
  flops: number;
}

export interface OpProfile {
  steps: number;
  tokens: number;
  /** Whole steps, the checks and copies between ops included. */
  stepSeconds: number;
  /** In the order a step first ran them. */
  ops: OpTime[];
}

export interface NativePlan {
  /**
   * Runs the graph on `tokens` at `positions` in `slot`, on a worker thread. Writes the output
   * rows (the last token's, or every token's when allOutputs) into `out`.
   */
  forward(tokens: Int32Array, positions: Int32Array, slot: number, allOutputs: boolean, out: Float32Array): Promise<void>;
  /** One step over rows of several slots (see BatchStep in src/backend/backend.ts); forward() is its one-slot case. */
  forwardBatch(tokens: Int32Array, positions: Int32Array, slots: Int32Array, outputs: Int32Array, out: Float32Array): Promise<void>;
  /** Copies positions [0, n) of one slot's KV cache to another. */
  copySlot(from: number, to: number, n: number): void;
  /** Frees native memory and stops the thread pool; the plan cannot be used afterwards. */
  dispose(): void;
}

/** A CUDA device the addon's kernels run on. */
export interface CudaDevice {
  index: number;
  name: string;
  /** "major.minor", e.g. "9.0". */
  computeCapability: string;
  /** Bytes of device memory. */
  totalMemory: number;
  multiProcessors: number;
  /** Peak memory bandwidth in bytes per second (memory clock x bus width), or 0 when unknown. */
  memoryBandwidth: number;
}

export interface CudaDeviceList {
  devices: CudaDevice[];
  /** Why the list is empty or a device was left out (no CUDA in this build, no driver, no device, too old); null when all is well. */
  reason: string | null;
  /** The architectures the kernels were built for, e.g. "80,89,90"; empty without CUDA. */
  architectures: string;
}

export interface NativeCudaPlanOptions extends NativePlanOptions {
  /** CUDA device index (cudaDevices().devices[i].index). */
  device: number;
  /** Capture repeated step shapes as CUDA graphs (default true). */
  graphs?: boolean;
}

/** Errors from the CUDA plan's constructor carry `kilnCode`. */
export type NativeCudaErrorCode = 'invalid_graph' | 'cuda_out_of_memory' | 'cuda_error' | 'cuda_unavailable';

export interface NativeCudaPlan extends NativePlan {
  /** Copies the weights to the device on a worker thread, reporting the fraction done; once, before forward. */
  upload(onProgress?: (fraction: number) => void): Promise<void>;
  /** A forward step that returns only the index of the largest value of the last output row (greedy decoding). */
  forwardArgmax(tokens: Int32Array, positions: Int32Array, slot: number): Promise<number>;
  /** Device milliseconds per step over `iterations` back-to-back runs of one step (CUDA events; after a warm-up). */
  benchmark(tokens: Int32Array, positions: Int32Array, slot: number, iterations: number): Promise<number>;
  /** Device bytes held by the plan. */
  memory(): { weights: number; activations: number; kvCache: number };
}

export interface NativeAddon {
  cpuFeatures(): CpuFeatures;
  /** The native type traits table, for the check against the TS table. */
  typeTable(): NativeTypeRow[];
  /** Maps a file read-only (copy-on-write) and returns it as an external ArrayBuffer. */
  mapFile(path: string): ArrayBuffer;
  /** Reference quantizer: n = src.length elements into dst (the GGML block layout). */
  quantize(type: number, src: Float32Array, dst: Uint8Array): void;
  /** The activation quantizer matrix products use at the current kernel level (SIMD where it pays). */
  quantizeActivations(type: number, src: Float32Array, dst: Uint8Array): void;
  /** Dequantizes dst.length elements. */
  dequantize(type: number, src: Uint8Array, dst: Float32Array): void;
  /** y (nTokens, rows) = x (nTokens, cols) * W^T, synchronously; for kernel tests. */
  mulMat(type: number, weights: Uint8Array, rows: number, cols: number, x: Float32Array, nTokens: number, y: Float32Array, threads: number): void;
  /**
   * The time for that product as a plan runs it at the current kernel level (packed first where the level
   * packs the type): the minimum and median over `calls` calls after one, in microseconds. With `copies`
   * (default 1) the calls cycle through that many copies of the weights (from memory when they are larger
   * together than the caches); `threads` (default 1) share each call.
   */
  timeMulMat(type: number, weights: Uint8Array, rows: number, cols: number, x: Float32Array, nTokens: number, calls: number, copies?: number, threads?: number): {
    minUs: number;
    medianUs: number;
    packed: boolean;
  };
  /** The index of the largest value: the lowest on ties, NaN never wins, 0 when none is above -Infinity (src/sampling/greedy.ts). */
  argmax(values: Float32Array): number;
  /**
   * probs[0..n) = the softmax of logits[0..n) (finite): the exps softmaxDraw weighs with
   * (temperature 1), each divided by their total. Sampling's softmax (src/sampling/candidates.ts).
   */
  softmax(logits: Float32Array, n: number, probs: Float64Array): void;
  /**
   * One token drawn from the softmax of the whole row at temperature t (> 0), u in [0, 1) the
   * uniform draw; the row is overwritten (its clamped, scaled logits, then their exps). The
   * sampler's draw when nothing narrows the candidates (native/cpu/ops.h softmaxDrawRow).
   */
  softmaxDraw(logits: Float32Array, temperature: number, u: number): number;
  /**
   * The best k (1..length) of the row as the sampler ranks candidates (clamped as Candidates.reset
   * clamps; the higher logit, then the lower id), best first into ids[0..k) and out[0..k).
   */
  topK(logits: Float32Array, k: number, ids: Int32Array, out: Float32Array): void;
  /**
   * Top-p (0 < p < 1) over the whole row at temperature 1: the smallest best-first prefix (topK's
   * order) whose probabilities reach p, into ids and out, best first; its length, or -1 when it
   * needs more than maxK tokens (native/cpu/ops.h nucleusRow).
   */
  nucleus(logits: Float32Array, p: number, maxK: number, ids: Int32Array, out: Float32Array): number;
  /** The tokens whose clamped logit (as topK clamps) is >= threshold, in id order, into ids and out (each as long as the row); how many. */
  keepAtLeast(logits: Float32Array, threshold: number, ids: Int32Array, out: Float32Array): number;
  /** 'generic' runs the scalar definitions; 'best' the fastest kernels this CPU has. */
  /** 'avx2': the SIMD kernels without the AVX-512 ones, so tests cover both tiers on an AVX-512 CPU. */
  setKernelLevel(level: 'generic' | 'avx2' | 'best'): void;
  Plan: new (graph: NativeGraph, options: NativePlanOptions) => NativePlan;
  /**
   * Process-wide: CPU plans time each op of their steps while on (turning it on or off clears the
   * totals). For benches: where a step's time goes.
   */
  setOpProfiling(on: boolean): void;
  /** The CPU plans' op times since the last call (or since profiling was turned on), and clears them. */
  takeOpProfile(): OpProfile;
  /** CUDA devices the kernels run on; an empty list with the reason on machines (or builds) without them. Never throws. */
  cudaDevices(): CudaDeviceList;
  /** Throws (kilnCode 'cuda_unavailable') in builds without CUDA. */
  CudaPlan: new (graph: NativeGraph, options: NativeCudaPlanOptions) => NativeCudaPlan;
  /** Best read bandwidth in GB/s of `threads` threads over a buffer of `bytes`, over about `seconds`. */
  probeMemoryBandwidth(threads: number, bytes: number, seconds: number): Promise<number>;
  /** Peak FMA rate in GFLOP/s (AVX2 FMA chains where the CPU has them) of `threads` threads. */
  probeFmaPeak(threads: number, seconds: number): Promise<number>;
}

let cached: NativeAddon | undefined;
let cachedPath: string | undefined;

/** The file native() loaded the addon from (loading it first if need be). */
export function nativeAddonPath(): string {
  native();
  return cachedPath!;
}

/** Loads build/Release/kiln.node (cmake-js) or the node-gyp build. */
export function native(): NativeAddon {
  if (cached) return cached;
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const base = existsSync(join(root, 'package.json')) ? root : join(root, '..');
  // KILN_ADDON points at another build (a second build folder, a debug build), relative to the
  // working directory as a shell user writes it (require() alone would take it for a package name).
  const candidates = process.env.KILN_ADDON ? [resolve(process.env.KILN_ADDON)] : [join(base, 'build', 'Release', 'kiln.node')];
  const require = createRequire(import.meta.url);
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    try {
      cached = require(path) as NativeAddon;
      cachedPath = path;
      return cached;
    } catch (err) {
      throw new NativeAddonError(`The native addon at ${path} failed to load: ${(err as Error).message}. Rebuild it with \`npm run build:native\`.`, { cause: err });
    }
  }
  throw new NativeAddonError(`The native addon is not built (looked for ${candidates.join(', ')}). Run \`npm install\` or \`npm run build:native\`.`);
}
