// The buffers of one compiled graph: created through here so dispose() frees them all, and weights
// uploaded in their GGML blocks, split by rows where a tensor is larger than one binding may be.
/// <reference types="@webgpu/types" />
import { GgmlType, rowBytes } from '../../gguf/ggml-type.js';
import type { GraphTensor } from '../../model/graph.js';
import { dequantize } from '../../reference/quantize.js';
import type { GpuConstants } from './gpu-device.js';

/** Weight uploads go in pieces so Dawn's staging copy stays bounded. */
const UPLOAD_PIECE = 64 << 20;

/** A weight tensor's rows, in bindings of at most the binding limit each. */
export interface WeightChunks {
  tensor: GraphTensor;
  rowBytes: number;
  chunks: Array<{ buffer: GPUBuffer; firstRow: number; rows: number }>;
}

export const align = (n: number, a: number) => Math.ceil(n / a) * a;

/** A small constant vector (norm weights, biases, rope factors) as f32. */
export function f32Values(t: GraphTensor): Float32Array {
  const n = t.rows * t.cols;
  const bytes = new Uint8Array(t.data!.buffer, t.data!.byteOffset, t.data!.byteLength);
  return t.dtype === GgmlType.F32 ? new Float32Array(bytes.slice().buffer, 0, n) : dequantize(t.dtype as GgmlType, bytes, n);
}

export class GpuBuffers {
  private readonly all: GPUBuffer[] = [];
  private readonly weights = new Map<GraphTensor, WeightChunks>();
  private readonly vectors = new Map<GraphTensor, GPUBuffer>();

  constructor(
    private readonly device: GPUDevice,
    private readonly usage: GpuConstants['GPUBufferUsage'],
    /** Largest weight binding, bytes (a multiple of 4). */
    private readonly chunkLimit: number,
  ) {}

  private create(label: string, bytes: number, usage: number): GPUBuffer {
    const b = this.device.createBuffer({ label, size: Math.max(align(bytes, 4), 4), usage });
    this.all.push(b);
    return b;
  }

  storage(label: string, bytes: number): GPUBuffer {
    return this.create(label, bytes, this.usage.STORAGE | this.usage.COPY_SRC | this.usage.COPY_DST);
  }

  readback(label: string, bytes: number): GPUBuffer {
    return this.create(label, bytes, this.usage.MAP_READ | this.usage.COPY_DST);
  }

  uniform(label: string, bytes: number): GPUBuffer {
    return this.create(label, bytes, this.usage.UNIFORM | this.usage.COPY_DST);
  }

  /** A table or matrix in its GGML blocks, uploaded once however many nodes read it. */
  weight(t: GraphTensor): WeightChunks {
    let w = this.weights.get(t);
    if (w) return w;
    const rb = rowBytes(t.dtype, t.cols);
    const perChunk = Math.max(1, Math.floor(this.chunkLimit / rb));
    const chunks: WeightChunks['chunks'] = [];
    for (let first = 0; first < t.rows; first += perChunk) {
      const rows = Math.min(perChunk, t.rows - first);
      const buffer = this.storage(`${t.name} [${first}, ${first + rows})`, rows * rb);
      this.upload(buffer, t.data!.buffer, t.data!.byteOffset + first * rb, rows * rb);
      chunks.push({ buffer, firstRow: first, rows });
    }
    w = { tensor: t, rowBytes: rb, chunks };
    this.weights.set(t, w);
    return w;
  }

  /** A small vector as f32, uploaded once. */
  vector(t: GraphTensor): GPUBuffer {
    let b = this.vectors.get(t);
    if (!b) {
      const values = f32Values(t);
      b = this.storage(t.name, values.byteLength);
      this.device.queue.writeBuffer(b, 0, values);
      this.vectors.set(t, b);
    }
    return b;
  }

  // writeBuffer takes whole words: the last partial word of a tensor goes through a padded copy.
  private upload(buffer: GPUBuffer, data: ArrayBuffer, offset: number, bytes: number): void {
    const whole = bytes & ~3;
    for (let at = 0; at < whole; at += UPLOAD_PIECE) {
      this.device.queue.writeBuffer(buffer, at, data, offset + at, Math.min(UPLOAD_PIECE, whole - at));
    }
    if (whole < bytes) {
      const tail = new Uint8Array(4);
      tail.set(new Uint8Array(data, offset + whole, bytes - whole));
      this.device.queue.writeBuffer(buffer, whole, tail);
    }
  }

  destroy(): void {
    for (const b of this.all) b.destroy();
  }
}
