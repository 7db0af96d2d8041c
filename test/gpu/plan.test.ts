// The WebGPU planner without a GPU: what it refuses, and how it reuses activation buffers.
import { describe, expect, it } from 'vitest';
import { WebGpuGraphError } from '../../src/backend/webgpu/errors.js';
import { planGraph } from '../../src/backend/webgpu/plan.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { buildDecoderGraph } from '../../src/model/decoder-graph.js';
import { GraphBuilder, type WeightData } from '../../src/model/graph.js';
import { readHParams } from '../../src/model/hparams.js';
import { ModelWeights } from '../../src/model/weights.js';
import { MODELS } from '../helpers/paths.js';

const options = { slots: 1, contextSize: 64, maxBatch: 8, kvCacheType: 'f32' as const, threads: 1 };
const bytes = (n: number): WeightData => ({ buffer: new ArrayBuffer(n), byteOffset: 0, byteLength: n });

function activations(g: GraphBuilder, cols: number): number {
  return g.getRows('x', g.constant('table', GgmlType.F32, cols, 4, bytes(16 * cols)), g.tokens());
}

describe('WebGPU planner', () => {
  it('plans a model with few activation buffers and one KV width', () => {
    const { file, buffer } = openGguf(`${MODELS}/stories260K.gguf`);
    const hp = readHParams(file);
    const plan = planGraph(buildDecoderGraph(hp, new ModelWeights(file, buffer, hp.architecture)), options);
    expect(plan.nLayers).toBe(hp.nLayers);
    expect(plan.kvWidth).toBe(hp.nKvHeads * hp.headDim);
    expect(plan.bufferFloats.length).toBeLessThanOrEqual(6);
    const activationTensors = plan.graph.tensors.filter((t, i) => !t.data && plan.bufferOf[i]! >= 0);
    expect(activationTensors.length).toBeGreaterThan(plan.bufferFloats.length * 5);
  });

  it('refuses weight types it cannot read, naming the node and tensor', () => {
    const g = new GraphBuilder();
    const w = g.constant('blk.0.ffn_up.weight', GgmlType.Q4_1, 32, 2, bytes(40));
    expect(() => planGraph(g.build(g.mulMat('m', w, activations(g, 32))), options)).toThrow(WebGpuGraphError);
    expect(() => planGraph(g.build(g.mulMat('m', w, activations(g, 32))), options)).toThrow(/node \d+ \(mul_mat\): tensor 'blk.0.ffn_up.weight' has a type/);
  });

  it('refuses shapes its kernels do not hold, and malformed graphs', () => {
    const g = new GraphBuilder();
    const x = activations(g, 512);
    expect(() => planGraph(g.build(g.attention('a', x, x, x, { layer: 0, nHeads: 1, nKvHeads: 1, headDim: 512, scale: 1 })), options)).toThrow(/head dimension 512/);
    const h = new GraphBuilder();
    const wide = activations(h, 65536);
    expect(() => planGraph(h.build(h.rmsNorm('n', wide, h.constant('w', GgmlType.F32, 65536, 1, bytes(4 * 65536)), 1e-5)), options)).toThrow(/group width 65536/);
    const k = new GraphBuilder();
    const y = activations(k, 3);
    expect(() => planGraph(k.build(k.attention('a', y, y, y, { layer: 0, nHeads: 1, nKvHeads: 1, headDim: 3, scale: 1 })), { ...options, kvCacheType: 'f16' })).toThrow(/even key\/value width/);
    const bad = new GraphBuilder();
    const short = bad.constant('w', GgmlType.Q8_0, 32, 2, bytes(60));
    expect(() => planGraph(bad.build(bad.mulMat('m', short, activations(bad, 32))), options)).toThrow(/needs 68 bytes but has 60/);
    expect(() => planGraph(g.build(x), { ...options, maxBatch: 0 })).toThrow(/maxBatch/);
  });
});
