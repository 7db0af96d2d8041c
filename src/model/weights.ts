// Looks up a model's tensors by GGUF name, checks shape and type, and hands out views into the
// file mapping (never copies).
import { GgmlType, ggmlTypeInfo } from '../gguf/ggml-type.js';
import type { GgufFile, GgufTensorInfo } from '../gguf/types.js';
import type { WeightData } from './graph.js';
import { MissingTensorError, TensorShapeError, UnsupportedWeightTypeError } from './errors.js';

export interface Weight {
  name: string;
  type: GgmlType;
  /** GGML order: dims[0] is the row width. */
  dims: number[];
  data: WeightData;
}

export class ModelWeights {
  private readonly byName: Map<string, GgufTensorInfo>;

  constructor(private readonly file: GgufFile, private readonly buffer: ArrayBuffer, private readonly architecture: string) {
    this.byName = new Map(file.tensors.map((t) => [t.name, t]));
  }

  /** The tensor `name` with exactly `dims` (GGML order). */
  get(name: string, dims: number[]): Weight {
    const w = this.optional(name, dims);
    if (!w) throw new MissingTensorError(name, this.architecture);
    return w;
  }

  optional(name: string, dims: number[]): Weight | undefined {
    const info = this.byName.get(name);
    if (!info) return undefined;
    const found = trimTrailingOnes(info.dims);
    if (found.length !== dims.length || found.some((d, i) => d !== dims[i])) throw new TensorShapeError(name, dims, info.dims);
    const typeInfo = ggmlTypeInfo(info.type);
    if (!typeInfo?.isWeightType) throw new UnsupportedWeightTypeError(name, typeInfo?.name ?? `type ${info.type}`);
    return {
      name,
      type: info.type,
      dims: found,
      data: { buffer: this.buffer, byteOffset: this.file.dataOffset + info.offset, byteLength: info.byteSize },
    };
  }
}

// GGUF writers sometimes store a vector as [n, 1].
function trimTrailingOnes(dims: readonly number[]): number[] {
  const out = dims.slice();
  while (out.length > 1 && out[out.length - 1] === 1) out.pop();
  return out;
}
