// Rewrites a shared model with its matrices in another weight type (kiln's own reference
// quantizers), keeping metadata and every 1-D tensor as they are.
import { readFileSync, writeFileSync } from 'node:fs';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { metadataEntries } from '../../src/gguf/metadata-entries.js';
import { parseGguf } from '../../src/gguf/reader.js';
import { writeGguf } from '../../src/gguf/writer.js';
import { dequantize, quantize } from '../../src/reference/quantize.js';

export function requantizeModel(src: string, dst: string, type: GgmlType): void {
  const bytes = new Uint8Array(readFileSync(src));
  const file = parseGguf(bytes);
  const tensors = file.tensors.map((t) => {
    const raw = bytes.subarray(file.dataOffset + t.offset, file.dataOffset + t.offset + t.byteSize);
    if (t.dims.length < 2) return { name: t.name, dims: t.dims, type: t.type, data: raw };
    const n = t.dims.reduce((a, b) => a * b, 1);
    return { name: t.name, dims: t.dims, type, data: quantize(type, dequantize(t.type, raw, n)) };
  });
  writeFileSync(dst, writeGguf({ metadata: metadataEntries(file), tensors }));
}

export { GgmlType };
