// Bounds the GGUF reader enforces before it allocates anything a file asks for. Each sits well
// above what real models use, and far below what would let one hostile file exhaust memory.

/** Largest real models (MoE with per-layer expert tensors) carry a few thousand tensors. */
export const MAX_TENSORS = 65_536;

/** Real files carry under a hundred metadata keys. */
export const MAX_KV = 65_536;

/** The GGUF spec caps a key at 2^16 - 1 bytes. */
export const MAX_KEY_BYTES = 65_535;

/** ggml's GGML_MAX_NAME (64, including the NUL): llama.cpp cannot load a longer name either. */
export const MAX_TENSOR_NAME_BYTES = 63;

/** Chat templates, the longest strings in real files, are under 100 KiB. */
export const MAX_STRING_BYTES = 16 * 1024 * 1024;

/** Vocabularies (~256k tokens) and merge lists (~500k) are the longest arrays. */
export const MAX_ARRAY_ELEMENTS = 16 * 1024 * 1024;

/** Nested arrays are allowed by the spec but unused in practice; the bound keeps recursion shallow. */
export const MAX_ARRAY_NESTING = 8;

/** ggml tensors have at most 4 dimensions (GGML_MAX_DIMS). */
export const MAX_DIMS = 4;

/** Larger alignments only waste file space; 64 KiB covers page-aligned writers. */
export const MAX_ALIGNMENT = 65_536;

/** The alignment when a file has no `general.alignment`. */
export const DEFAULT_ALIGNMENT = 32;
