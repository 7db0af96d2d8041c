// The forward pass of the llama family (Llama 2/3, Mistral, TinyLlama), Qwen2 and Qwen3 as one
// graph: pre-norm decoder blocks of GQA attention with RoPE and a SwiGLU feed-forward.
import { Graph, GraphBuilder } from './graph.js';
import type { HParams } from './hparams.js';
import type { ModelWeights, Weight } from './weights.js';

export function buildDecoderGraph(hp: HParams, weights: ModelWeights): Graph {
  const g = new GraphBuilder();
  const { dim, nHeads, nKvHeads, headDim, ffnDim, vocabSize, rmsEps: eps } = hp;
  const qDim = nHeads * headDim;
  const kvDim = nKvHeads * headDim;
  const constant = (w: Weight) => g.constant(w.name, w.type, w.dims[0]!, w.dims[1] ?? 1, w.data);
  const matrix = (name: string, cols: number, rows: number) => constant(weights.get(name, [cols, rows]));
  const vector = (name: string, n: number) => constant(weights.get(name, [n]));
  const optionalVector = (name: string, n: number) => {
    const w = weights.optional(name, [n]);
    return w ? constant(w) : undefined;
  };

  const embeddings = matrix('token_embd.weight', dim, vocabSize);
  const freqFactors = optionalVector('rope_freqs.weight', hp.ropeDims / 2);
  const rope = { headDim, nRot: hp.ropeDims, neox: hp.features.ropeNeox, freqBase: hp.ropeBase, freqScale: hp.ropeFreqScale, freqFactors };
  const tokens = g.tokens();

  let x = g.getRows('inp_embd', embeddings, tokens); // (tokens, dim)
  for (let l = 0; l < hp.nLayers; l++) {
    const p = `blk.${l}`;
    const bias = (name: string, n: number) => (hp.features.qkvBias ? vector(`${p}.${name}.bias`, n) : undefined);

    // Attention
    const h = g.rmsNorm(`${p}.attn_norm`, x, vector(`${p}.attn_norm.weight`, dim), eps); // (tokens, dim)
    let q = g.mulMat(`${p}.q`, matrix(`${p}.attn_q.weight`, dim, qDim), h, bias('attn_q', qDim)); // (tokens, nHeads*headDim)
    let k = g.mulMat(`${p}.k`, matrix(`${p}.attn_k.weight`, dim, kvDim), h, bias('attn_k', kvDim)); // (tokens, nKvHeads*headDim)
    const v = g.mulMat(`${p}.v`, matrix(`${p}.attn_v.weight`, dim, kvDim), h, bias('attn_v', kvDim)); // (tokens, nKvHeads*headDim)
    if (hp.features.qkNorm) {
      q = g.rmsNorm(`${p}.q_norm`, q, vector(`${p}.attn_q_norm.weight`, headDim), eps, headDim); // per head
      k = g.rmsNorm(`${p}.k_norm`, k, vector(`${p}.attn_k_norm.weight`, headDim), eps, headDim);
    }
    q = g.rope(`${p}.q_rope`, q, { ...rope, nHeads });
    k = g.rope(`${p}.k_rope`, k, { ...rope, nHeads: nKvHeads });
    let attn = g.attention(`${p}.attn`, q, k, v, { layer: l, nHeads, nKvHeads, headDim, scale: 1 / Math.sqrt(headDim) }); // (tokens, nHeads*headDim)
    if (l === hp.nLayers - 1) {
      // Past the last attention only the output rows matter (its keys and values are cached by
      // now): the rest of the last block runs on them alone, as llama.cpp's graph does. Every
      // kernel gives a row the same bits whatever the rows beside it, so the logits are unchanged.
      attn = g.outputRows(`${p}.attn_rows`, attn); // (outputs, nHeads*headDim)
      x = g.outputRows(`${p}.residual_rows`, x); // (outputs, dim)
    }
    const attnOut = g.mulMat(`${p}.attn_out`, matrix(`${p}.attn_output.weight`, qDim, dim), attn); // (tokens or outputs, dim)
    x = g.add(`${p}.attn_residual`, x, attnOut);

    // Feed-forward
    const f = g.rmsNorm(`${p}.ffn_norm`, x, vector(`${p}.ffn_norm.weight`, dim), eps); // (tokens, dim)
    const gate = g.mulMat(`${p}.ffn_gate`, matrix(`${p}.ffn_gate.weight`, dim, ffnDim), f); // (tokens, ffn)
    const up = g.mulMat(`${p}.ffn_up`, matrix(`${p}.ffn_up.weight`, dim, ffnDim), f); // (tokens, ffn)
    const act = g.swiglu(`${p}.ffn_act`, gate, up); // (tokens, ffn)
    const down = g.mulMat(`${p}.ffn_down`, matrix(`${p}.ffn_down.weight`, ffnDim, dim), act); // (tokens, dim)
    x = g.add(`${p}.ffn_residual`, x, down);
  }

  const normed = g.rmsNorm('result_norm', x, vector('output_norm.weight', dim), eps); // (outputs, dim)
  const output = weights.optional('output.weight', [dim, vocabSize]); // absent: tied to the embeddings
  const logits = g.mulMat('result_output', output ? constant(output) : embeddings, normed); // (outputs, vocab)
  return g.build(logits);
}
