// The CPU plan's op profile (what `bench profile` reads): every op of every step is counted once,
// products by their weights as the model file holds them, and timing changes no token.
import { afterEach, describe, expect, it } from 'vitest';
import { Runtime } from '../../src/index.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { native } from '../../src/native/binding.js';
import { MODELS } from '../helpers/paths.js';

const MODEL = `${MODELS}/stories260K.gguf`;

// The file's own tensor sizes: bytes and elements of layer 0's tensors (every layer has the same shapes).
function layer0(names: string[]): { bytes: number; elements: number } {
  const { file } = openGguf(MODEL);
  let bytes = 0, elements = 0;
  for (const n of names) {
    const t = file.tensors.find((x) => x.name === `blk.0.${n}.weight`)!;
    bytes += Number(t.byteSize);
    elements += t.dims[0]! * t.dims[1]!;
  }
  return { bytes, elements };
}

afterEach(() => native().setOpProfiling(false));

describe('op profile', () => {
  it('counts every op of every step, products by the weights they read', async () => {
    const { file } = openGguf(MODEL);
    const nLayers = Number(file.metadata.get('llama.block_count'));
    const embd = file.tensors.find((t) => t.name === 'token_embd.weight')!;
    const rt = await Runtime.load({ model: MODEL, backend: 'cpu', threads: 2 });
    try {
      native().setOpProfiling(true);
      const r = await rt.complete({ prompt: 'Once upon a time', maxTokens: 9, temperature: 0 });
      const p = native().takeOpProfile();
      native().setOpProfiling(false);

      // One step for the prompt, then one per token fed back (the last token picked is not).
      expect(p.steps).toBe(r.usage.completionTokens);
      expect(p.tokens).toBe(r.usage.promptTokens + r.usage.completionTokens - 1);
      const op = (label: string) => {
        const o = p.ops.find((x) => x.label === label);
        if (!o) throw new Error(`no '${label}' in ${p.ops.map((x) => x.label).join(', ')}`);
        return o;
      };
      expect(op('attention').calls).toBe(nLayers * p.steps);
      expect(op('rms_norm').calls).toBe((2 * nLayers + 1) * p.steps);
      const qkv = layer0(['attn_q', 'attn_k', 'attn_v']);
      expect(op('mul_mat attn_q+attn_k+attn_v f32')).toMatchObject({
        calls: nLayers * p.steps, weightBytes: nLayers * p.steps * qkv.bytes, flops: 2 * qkv.elements * nLayers * p.tokens,
      });
      const down = layer0(['ffn_down']);
      expect(op('mul_mat ffn_down f32')).toMatchObject({ calls: nLayers * p.steps, weightBytes: nLayers * p.steps * down.bytes });
      // Tied embeddings: the output product reads token_embd's bytes, for the one row each step wants.
      expect(op('mul_mat output f32')).toMatchObject({
        calls: p.steps, weightBytes: p.steps * Number(embd.byteSize), flops: 2 * embd.dims[0]! * embd.dims[1]! * p.steps,
      });
      for (const o of p.ops) expect(o.seconds).toBeGreaterThan(0);
      expect(p.ops.reduce((n, o) => n + o.seconds, 0)).toBeLessThanOrEqual(p.stepSeconds);

      // Off: nothing is recorded, and the tokens are those profiling gave.
      const again = await rt.complete({ prompt: 'Once upon a time', maxTokens: 9, temperature: 0 });
      expect(again.tokens).toEqual(r.tokens);
      expect(native().takeOpProfile()).toMatchObject({ steps: 0, tokens: 0, ops: [] });
    } finally {
      await rt.close();
    }
  });

  it('clears its totals when taken and when turned on', async () => {
    const rt = await Runtime.load({ model: MODEL, backend: 'cpu', threads: 1 });
    try {
      native().setOpProfiling(true);
      await rt.complete({ prompt: [1, 300], maxTokens: 2, temperature: 0 });
      expect(native().takeOpProfile().steps).toBe(2);
      expect(native().takeOpProfile().steps).toBe(0);
      await rt.complete({ prompt: [1, 301], maxTokens: 2, temperature: 0 });
      native().setOpProfiling(true);
      expect(native().takeOpProfile().steps).toBe(0);
    } finally {
      await rt.close();
    }
  });
});
