// `npm run bench -- cuda [--model FILE|SHAPE:TYPE] [--prompt 512] [--generate 128] [--runs 3]
//   [--models-dir DIR] [--json FILE]`: the CUDA backend on device 0. Three parts:
// 1. decode matrix-vector products per weight type (8 matrices of 14336 x 4096, 470 MB and more,
//    past any L2): device time from CUDA events over replayed steps, as bandwidth and as a share of
//    the device's peak; and the same matrices for a 512-token prefill step, in TFLOP/s;
// 2. the model's forward step (default: synthetic TinyLlama-1.1B Q4_0 from bench/models.ts): device
//    time per decode step at depth 0 and at depth --prompt, and per --prompt-token prefill step;
// 3. end to end through Runtime.complete: prefill and decode tok/s (median of --runs after a
//    warm-up), as the e2e bench measures them, end tokens excluded by logit bias.
import { randomFillSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { CudaBackend, cudaDevices, type CudaGraph } from '../src/backend/cuda/cuda-backend.js';
import { GGML_TYPES, GgmlType, rowBytes } from '../src/gguf/ggml-type.js';
import { openGguf } from '../src/gguf/open-gguf.js';
import { Runtime } from '../src/index.js';
import { buildDecoderGraph } from '../src/model/decoder-graph.js';
import { GraphBuilder } from '../src/model/graph.js';
import { readHParams } from '../src/model/hparams.js';
import { ModelWeights } from '../src/model/weights.js';
import { argValue, formatTable, median } from './machine.js';
import { DEFAULT_MODEL_DIR, ensureBenchModel, SHAPES } from './models.js';

const PRODUCT_TYPES = [GgmlType.Q4_0, GgmlType.Q8_0, GgmlType.Q4_K, GgmlType.Q6_K, GgmlType.F16, GgmlType.BF16];
const ROWS = 14336, COLS = 4096, MATRICES = 8;
const range = (n: number, from = 0) => Int32Array.from({ length: n }, (_, i) => from + i);
const fmt = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '-');

/** Device ms per step of `graph` with `n` tokens at positions from `from`. */
async function stepMs(graph: CudaGraph, n: number, from: number, iterations: number): Promise<number> {
  return graph.benchmark(range(n).map((i) => i % 100), range(n, from), 0, iterations);
}

interface ProductResult {
  type: string;
  decodeGBs: number;
  ofPeak: number;
  prefillTflops: number;
}

// Random bytes are weights as good as any for timing: the kernels' work does not depend on values.
async function productBench(peakGBs: number): Promise<ProductResult[]> {
  const results: ProductResult[] = [];
  const x = new Float32Array(100 * COLS).map(() => Math.random() - 0.5);
  for (const type of PRODUCT_TYPES) {
    const bytes = rowBytes(type, COLS) * ROWS;
    const weights = randomFillSync(new Uint8Array(bytes));
    const g = new GraphBuilder();
    const table = g.constant('x', GgmlType.F32, COLS, 100, { buffer: x.buffer as ArrayBuffer, byteOffset: 0, byteLength: x.byteLength });
    const input = g.getRows('in', table, g.tokens());
    let out = -1;
    for (let m = 0; m < MATRICES; m++) {
      out = g.mulMat(`m${m}`, g.constant(`w${m}`, type, COLS, ROWS, { buffer: weights.buffer as ArrayBuffer, byteOffset: 0, byteLength: bytes }), input);
    }
    const compiled = await new CudaBackend().compile(g.build(out), { slots: 1, contextSize: 512, maxBatch: 512, kvCacheType: 'f16', threads: 1 });
    try {
      const decodeMs = await stepMs(compiled, 1, 0, 50);
      const prefillMs = await stepMs(compiled, 512, 0, 5);
      const decodeGBs = (MATRICES * bytes) / decodeMs / 1e6;
      results.push({
        type: GGML_TYPES[type].name,
        decodeGBs,
        ofPeak: peakGBs > 0 ? decodeGBs / peakGBs : NaN,
        prefillTflops: (2 * MATRICES * ROWS * COLS * 512) / prefillMs / 1e9,
      });
      process.stderr.write(`${GGML_TYPES[type].name}: decode ${fmt(decodeGBs, 0)} GB/s, prefill ${fmt(results.at(-1)!.prefillTflops)} TFLOP/s\n`);
    } finally {
      compiled.dispose();
    }
  }
  return results;
}

function resolveModel(spec: string, modelsDir: string): string {
  if (spec.endsWith('.gguf')) return spec;
  const [shape, type] = spec.split(':');
  const s = SHAPES[shape ?? ''];
  if (!s || !type) throw new Error(`--model takes FILE.gguf or SHAPE:TYPE (${Object.keys(SHAPES).join('|')}:q4_0|...), got '${spec}'`);
  return ensureBenchModel(s, type, { dir: modelsDir });
}

/** Bytes of weights a decode step reads: every matrix but an embedding table that is only gathered from. */
function weightBytesPerToken(file: string): number {
  const { file: gguf } = openGguf(file);
  const hasOutput = gguf.tensors.some((t) => t.name === 'output.weight');
  return gguf.tensors
    .filter((t) => t.dims.length >= 2 && t.dims[1]! > 1 && (t.name !== 'token_embd.weight' || !hasOutput))
    .reduce((n, t) => n + t.byteSize, 0);
}

async function modelStepBench(file: string, prompt: number) {
  const { file: gguf, buffer } = openGguf(file);
  const hp = readHParams(gguf);
  const graph = buildDecoderGraph(hp, new ModelWeights(gguf, buffer, hp.architecture));
  const compiled = await new CudaBackend().compile(graph, { slots: 1, contextSize: prompt + 256, maxBatch: prompt, kvCacheType: 'f16', threads: 1 });
  try {
    const prefillMs = await stepMs(compiled, prompt, 0, 5);
    const decodeShallowMs = await stepMs(compiled, 1, 0, 100);
    const decodeDeepMs = await stepMs(compiled, 1, prompt, 100);
    return { prefillMs, decodeShallowMs, decodeDeepMs, memory: compiled.memory() };
  } finally {
    compiled.dispose();
  }
}

async function endToEnd(file: string, promptTokens: number, generate: number, runs: number) {
  const started = performance.now();
  const rt = await Runtime.load({ model: file, backend: 'cuda', contextSize: promptTokens + generate + 16, maxBatch: promptTokens, kvCacheType: 'f16' });
  const loadMs = performance.now() - started;
  try {
    const logitBias: Record<number, number> = {};
    for (let id = 0; id < rt.info.hparams.vocabSize; id++) if (rt.tokenizer.isEog(id)) logitBias[id] = -Infinity;
    const prefill: number[] = [], decode: number[] = [];
    for (let round = 0; round <= runs; round++) {
      // A first token no earlier run had: nothing is reused from the cache.
      const prompt = Array.from({ length: promptTokens }, (_, i) => 1000 + ((i * 7919 + round * 104729) % 20000));
      prompt[0] = 300 + round;
      const r = await rt.complete({ prompt, maxTokens: generate, temperature: 0, logitBias });
      if (r.usage.cachedTokens !== 0) throw new Error(`run ${round} reused ${r.usage.cachedTokens} cached tokens`);
      if (round === 0) continue;
      prefill.push((r.timings.prefillTokens / r.timings.prefillMs) * 1000);
      decode.push((r.timings.decodeTokens / r.timings.decodeMs) * 1000);
    }
    return { loadMs, prefillTokS: median(prefill), decodeTokS: median(decode), prefillRuns: prefill, decodeRuns: decode };
  } finally {
    await rt.close();
  }
}

export async function run(args: string[]): Promise<void> {
  const list = cudaDevices();
  const device = list.devices[0];
  if (!device) throw new Error(`no CUDA device: ${list.reason}`);
  const promptTokens = Number(argValue(args, '--prompt') ?? 512);
  const generate = Number(argValue(args, '--generate') ?? 128);
  const runs = Number(argValue(args, '--runs') ?? 3);
  const modelsDir = argValue(args, '--models-dir') ?? DEFAULT_MODEL_DIR;
  const file = resolveModel(argValue(args, '--model') ?? 'tinyllama:q4_0', modelsDir);
  const peakGBs = device.memoryBandwidth / 1e9;
  console.log(`${device.name} (compute ${device.computeCapability}, ${device.multiProcessors} SMs, ${fmt(device.totalMemory / 2 ** 30, 0)} GiB, peak ${fmt(peakGBs, 0)} GB/s); kernels for ${list.architectures}`);

  const products = await productBench(peakGBs);
  console.log('\n' + formatTable(['weights', 'decode GB/s', 'of peak', 'prefill TFLOP/s'],
    products.map((p) => [p.type, fmt(p.decodeGBs, 0), `${fmt(100 * p.ofPeak, 0)}%`, fmt(p.prefillTflops)])));
  console.log(`${MATRICES} products of ${ROWS} x ${COLS} per step; decode: 1 token, prefill: 512; device time (CUDA events) over replayed steps.`);

  const bytes = weightBytesPerToken(file);
  const step = await modelStepBench(file, promptTokens);
  const e2e = await endToEnd(file, promptTokens, generate, runs);
  const decodeGBs = bytes / step.decodeShallowMs / 1e6;
  console.log('\n' + formatTable(['model step', 'device ms', 'tok/s'], [
    [`prefill ${promptTokens}`, fmt(step.prefillMs, 2), fmt((promptTokens / step.prefillMs) * 1000, 0)],
    ['decode at depth 0', fmt(step.decodeShallowMs, 3), fmt(1000 / step.decodeShallowMs, 0)],
    [`decode at depth ${promptTokens}`, fmt(step.decodeDeepMs, 3), fmt(1000 / step.decodeDeepMs, 0)],
  ]));
  console.log(`decode at depth 0 reads ${fmt(bytes / 1e6, 0)} MB of weights per token: ${fmt(decodeGBs, 0)} GB/s, ${fmt((100 * decodeGBs) / peakGBs, 0)}% of peak.`);
  console.log(`end to end (Runtime.complete, median of ${runs}): load ${fmt(e2e.loadMs, 0)} ms, prefill ${fmt(e2e.prefillTokS, 0)} tok/s, decode ${fmt(e2e.decodeTokS, 0)} tok/s`);

  const json = argValue(args, '--json');
  if (json) {
    writeFileSync(json, JSON.stringify({ device, architectures: list.architectures, model: file, promptTokens, generate, runs, products, step, weightBytesPerToken: bytes, e2e }, null, 2) + '\n');
    console.log(`wrote ${json}`);
  }
}
