// The shared models on the WebGPU backend against the CPU backend: stories260K's greedy text, the
// top-1 token under forced decoding (teacher forcing) on every shared model, GPU argmax, slots,
// weights split across bindings, and the errors of a graph or step the backend cannot run.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { WebGpuGraphError, WebGpuLimitError } from '../../src/backend/webgpu/errors.js';
import { WebGpuBackend } from '../../src/backend/webgpu/webgpu-backend.js';
import type { WebGpuGraph } from '../../src/backend/webgpu/webgpu-graph.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { buildDecoderGraph } from '../../src/model/decoder-graph.js';
import { type Graph, GraphBuilder } from '../../src/model/graph.js';
import { readHParams } from '../../src/model/hparams.js';
import { ModelWeights } from '../../src/model/weights.js';
import { Runtime } from '../../src/index.js';
import { greedy } from '../../src/sampling/greedy.js';
import { MODELS, REFERENCE } from '../helpers/paths.js';
import { adapterSummary, skipReason, title } from './gpu-adapter.js';

const stories = JSON.parse(readFileSync(`${REFERENCE}/stories260K.once-upon-a-time.llamacpp.json`, 'utf8')) as {
  tokens: number[];
  greedy_tokens: number[];
  greedy_text: string;
};

function loadGraph(name: string): { graph: Graph; vocab: number } {
  const { file, buffer } = openGguf(`${MODELS}/${name}.gguf`);
  const hp = readHParams(file);
  return { graph: buildDecoderGraph(hp, new ModelWeights(file, buffer, hp.architecture)), vocab: hp.vocabSize };
}

/** The token sequence each model is forced through: its llama.cpp reference, where there is one. */
function forcedTokens(name: string, vocab: number): number[] {
  if (name === 'stories260K') return [...stories.tokens, ...stories.greedy_tokens];
  if (name.startsWith('tiny-')) return (JSON.parse(readFileSync(`${REFERENCE}/${name}.llamacpp.json`, 'utf8')) as { tokens: number[] }).tokens;
  return Array.from({ length: 48 }, (_, i) => (i * 7919 + 1) % vocab);
}

/** How far the largest logit leads the second. */
function topMargin(row: Float32Array): number {
  let a = -Infinity;
  let b = -Infinity;
  for (const v of row) {
    if (v > a) [a, b] = [v, a];
    else if (v > b) b = v;
  }
  return a - b;
}

const top1 = (logits: Float32Array, width: number) => Array.from({ length: logits.length / width }, (_, t) => greedy(logits.subarray(t * width, (t + 1) * width)));

describe.skipIf(skipReason)(title('WebGPU backend on the shared models'), () => {
  it('stories260K: greedy output equals the CPU backend for 200 tokens', async () => {
    const texts: Record<string, { tokens: number[]; text: string }> = {};
    for (const backend of ['cpu', 'webgpu'] as const) {
      const rt = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, backend, threads: 2 });
      try {
        expect(rt.info.backend).toBe(backend);
        const r = await rt.complete({ prompt: 'Once upon a time', maxTokens: 200, temperature: 0 });
        texts[backend] = { tokens: r.tokens, text: r.text };
      } finally {
        await rt.close();
      }
    }
    expect(texts.webgpu!.tokens).toHaveLength(200);
    expect(texts.webgpu!.tokens).toEqual(texts.cpu!.tokens);
    expect(texts.webgpu!.text).toBe(stories.greedy_text);
  });

  // Random-weight models have flat distributions (top-1 and top-2 often within 0.001), so this is a
  // strict test of how closely the two backends round: the WebGPU kernels compute every op in the
  // CPU backend's floating-point order (fused multiply-adds included, emulated where the device's
  // fma() rounds twice, as lavapipe's does), and every position must agree, with either KV cache.
  // The first step is a prefill of 40 tokens (tiled mul_mat, fused attention); every later token
  // is a decode step of its own (mul_mat_vec, three-pass attention) over the cache before it.
  const MODEL_NAMES = ['stories260K', 'llama-2-tiny-random', 'tiny-llama-q8_0', 'tiny-llama-q4_0', 'tiny-qwen2-f16', 'tiny-qwen3-q8_0'];
  const PREFILL = 40;
  for (const name of MODEL_NAMES) {
    for (const kvCacheType of ['f32', 'f16'] as const) {
      it(`${name}, ${kvCacheType} KV cache: top-1 under forced decoding agrees with the CPU backend at every position`, async () => {
        const { graph, vocab } = loadGraph(name);
        const tokens = forcedTokens(name, vocab);
        const options = { slots: 1, contextSize: 512, maxBatch: 64, kvCacheType, threads: 2 };
        const logits: Float32Array[] = [];
        for (const backend of [new CpuBackend(), new WebGpuBackend()]) {
          const compiled = await backend.compile(graph, options);
          const out = new Float32Array(tokens.length * compiled.outputWidth);
          for (let from = 0; from < tokens.length; ) {
            const to = from === 0 ? Math.min(PREFILL, tokens.length) : from + 1;
            await compiled.forward(Int32Array.from(tokens.slice(from, to)), Int32Array.from({ length: to - from }, (_, i) => from + i), 0, true,
              out.subarray(from * compiled.outputWidth, to * compiled.outputWidth));
            from = to;
          }
          compiled.dispose();
          logits.push(out);
        }
        const width = logits[0]!.length / tokens.length;
        const [cpu, gpu] = [top1(logits[0]!, width), top1(logits[1]!, width)];
        const disagree = cpu.flatMap((token, i) => (token !== gpu[i] ? [`position ${i}: cpu ${token}, webgpu ${gpu[i]}, cpu lead ${topMargin(logits[0]!.subarray(i * width, (i + 1) * width))}`] : []));
        expect(disagree, `positions where the top-1 differs (of ${tokens.length})`).toEqual([]);
      });
    }
  }

  describe('one compiled model', () => {
    let graph: WebGpuGraph;
    let cpu: Awaited<ReturnType<CpuBackend['compile']>>;
    const prompt = Int32Array.from(stories.tokens);
    const at = (n: number, from = 0) => Int32Array.from({ length: n }, (_, i) => from + i);
    beforeAll(async () => {
      const { graph: g } = loadGraph('stories260K');
      const options = { slots: 3, contextSize: 256, maxBatch: 32, kvCacheType: 'f32' as const, threads: 2 };
      graph = await new WebGpuBackend().compile(g, options);
      cpu = await new CpuBackend().compile(g, options);
    });
    afterAll(() => {
      graph.dispose();
      cpu.dispose();
    });

    it('argmax on the GPU equals greedy over the read-back logits', async () => {
      // Slot 0 reads logits back, slot 1 only its argmax, over the same tokens.
      const logits = new Float32Array(graph.outputWidth);
      await graph.forward(prompt, at(prompt.length), 0, false, logits);
      graph.copySlot(0, 1, prompt.length);
      let token = greedy(logits);
      for (let pos = prompt.length; pos < prompt.length + 20; pos++) {
        const onGpu = await graph.forwardArgmax(Int32Array.of(token), Int32Array.of(pos), 1);
        await graph.forward(Int32Array.of(token), Int32Array.of(pos), 0, false, logits);
        token = greedy(logits);
        expect(onGpu).toBe(token);
      }
    });

    it('copySlot: a copied prefix decodes exactly as the original', async () => {
      const a = new Float32Array(graph.outputWidth);
      const b = new Float32Array(graph.outputWidth);
      await graph.forward(prompt, at(prompt.length), 0, false, a);
      graph.copySlot(0, 2, prompt.length);
      await graph.forward(Int32Array.of(300), Int32Array.of(prompt.length), 0, false, a);
      await graph.forward(Int32Array.of(300), Int32Array.of(prompt.length), 2, false, b);
      expect(b).toEqual(a);
    });

    it('rejects bad steps as the CPU backend does', async () => {
      const y = new Float32Array(graph.outputWidth);
      for (const g of [graph, cpu]) {
        await expect(g.forward(Int32Array.of(512), Int32Array.of(0), 0, true, y)).rejects.toThrow(/outside the vocabulary/);
        await expect(g.forward(Int32Array.of(1), Int32Array.of(256), 0, true, y)).rejects.toThrow(/outside the context/);
        await expect(g.forward(Int32Array.of(1, 2), Int32Array.of(0, 1), 0, true, y)).rejects.toThrow(/output buffer/);
        await expect(g.forward(Int32Array.of(1), Int32Array.of(0), 3, true, y)).rejects.toThrow(/slot 3/);
        await expect(g.forward(new Int32Array(33), at(33), 0, false, y)).rejects.toThrow(/1 to 32 tokens/);
      }
      await graph.forward(Int32Array.of(1), Int32Array.of(0), 0, false, y); // still usable
    });
  });

  it('weights split across bindings give the same logits', async () => {
    const { graph: g } = loadGraph('stories260K');
    const options = { slots: 1, contextSize: 64, maxBatch: 8, kvCacheType: 'f32' as const, threads: 1 };
    const outs: Float32Array[] = [];
    // 4 KiB: the 512 x 64 embedding table and every matrix become several bindings of whole rows.
    for (const tuning of [{}, { maxBindingBytes: 4096 }]) {
      const compiled = await new WebGpuBackend(tuning).compile(g, options);
      const out = new Float32Array(9 * compiled.outputWidth);
      await compiled.forward(Int32Array.from(stories.tokens), at5(), 0, true, out.subarray(0, 5 * compiled.outputWidth));
      for (let i = 0; i < 4; i++) await compiled.forward(Int32Array.of(100 + i), Int32Array.of(5 + i), 0, false, out.subarray((5 + i) * compiled.outputWidth, (6 + i) * compiled.outputWidth));
      compiled.dispose();
      outs.push(out);
    }
    expect(outs[1]).toEqual(outs[0]);
  });

  it('refuses at compile time what it cannot run, naming the node or the limit', async () => {
    const options = { slots: 1, contextSize: 16, maxBatch: 4, kvCacheType: 'f32' as const, threads: 1 };
    const g = new GraphBuilder();
    const t = g.tokens();
    const q41 = g.constant('w', GgmlType.Q4_1, 32, 2, { buffer: new ArrayBuffer(40), byteOffset: 0, byteLength: 40 });
    const x = g.getRows('x', g.constant('t', GgmlType.F32, 32, 4, { buffer: new ArrayBuffer(512), byteOffset: 0, byteLength: 512 }), t);
    await expect(new WebGpuBackend().compile(g.build(g.mulMat('m', q41, x)), options)).rejects.toThrow(WebGpuGraphError);
    await expect(new WebGpuBackend().compile(g.build(g.mulMat('m', q41, x)), options)).rejects.toThrow(/node 1 \(mul_mat\).*'w'.*cannot multiply/);

    const h = new GraphBuilder();
    const ht = h.tokens();
    const wide = h.getRows('q', h.constant('t', GgmlType.F32, 512, 4, { buffer: new ArrayBuffer(8192), byteOffset: 0, byteLength: 8192 }), ht);
    const attn = h.attention('a', wide, wide, wide, { layer: 0, nHeads: 1, nKvHeads: 1, headDim: 512, scale: 1 });
    await expect(new WebGpuBackend().compile(h.build(attn), options)).rejects.toThrow(/head dimension 512/);

    const { graph: stories260K } = loadGraph('stories260K');
    const huge = { ...options, contextSize: 1 << 22, slots: 256 };
    await expect(new WebGpuBackend().compile(stories260K, huge)).rejects.toThrow(WebGpuLimitError);
    await expect(new WebGpuBackend().compile(stories260K, huge)).rejects.toThrow(/maxStorageBufferBindingSize|maxBufferSize/);
  });

  it("backend 'auto' never takes a software adapter", async () => {
    const rt = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, backend: 'auto', threads: 1 });
    try {
      if (adapterSummary?.software) expect(rt.info.backend).not.toBe('webgpu');
    } finally {
      await rt.close();
    }
  });
});

const at5 = () => Int32Array.from({ length: 5 }, (_, i) => i);
