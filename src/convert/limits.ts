// Bounds `kiln convert` enforces on the files of a Hugging Face model directory before it
// allocates what they ask for. Each sits well above real models and far below what would let a
// hostile file exhaust memory.

/** safetensors' own MAX_HEADER_SIZE: real headers are a few hundred KiB. */
export const MAX_SAFETENSORS_HEADER_BYTES = 100_000_000;

/** Tensors in one safetensors file: large MoE shards hold a few thousand. */
export const MAX_SAFETENSORS_TENSORS = 65_536;

/** Dimensions of one tensor: weights have at most 5 (conv kernels). */
export const MAX_SAFETENSORS_DIMS = 8;

/** Bytes of a tensor name: real ones are under 100. */
export const MAX_TENSOR_NAME_BYTES = 1024;

/** config.json, generation_config.json, added_tokens.json: a few KiB in real models. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/** tokenizer.json and tokenizer_config.json: the largest real ones (Gemma) are about 35 MB. */
export const MAX_TOKENIZER_JSON_BYTES = 128 * 1024 * 1024;

/** model.safetensors.index.json: about 100 bytes per tensor. */
export const MAX_INDEX_BYTES = 64 * 1024 * 1024;

/** Weight shards named by one model: the largest public models ship a few hundred. */
export const MAX_WEIGHT_FILES = 4096;

/** Vocabulary entries: the largest real vocabularies have ~260k tokens. */
export const MAX_VOCAB = 1 << 22;

/** Decoder layers: the largest open models have under 200. */
export const MAX_LAYERS = 1024;

/** Hidden, feed-forward and head sizes. */
export const MAX_DIM = 1 << 20;

/** Attention heads per layer. */
export const MAX_HEADS = 1024;
