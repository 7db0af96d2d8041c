// Reference SwiGLU, the gated activation of the llama-family feed-forward block.

/** silu(gate) * up elementwise, silu(g) = g / (1 + exp(-g)). */
export function swiglu(gate: Float32Array, up: Float32Array): Float32Array {
  if (gate.length !== up.length) throw new RangeError(`swiglu: gate has ${gate.length} values, up ${up.length}`);
  return gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]);
}
