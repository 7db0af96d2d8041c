// The GGUF layer's public surface.
export * from './errors.js';
export * from './ggml-type.js';
export * from './limits.js';
export * from './metadata.js';
export { openGguf } from './open-gguf.js';
export { parseGguf } from './reader.js';
export * from './types.js';
export { writeGguf, type GgufWriteArray, type GgufWriteSpec, type GgufWriteTensor, type GgufWriteValue } from './writer.js';
