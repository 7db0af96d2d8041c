// The recorded work of a compiled graph: every dispatch with its pipeline, bind groups (one per KV
// slot when it touches the cache: such a dispatch runs once per slot segment of a step) and parameters, which live in one uniform buffer, each dispatch's
// block at its own aligned offset, rewritten only when a step's shape (token and output counts)
// changes; and the copies between passes.
/// <reference types="@webgpu/types" />
import type { GpuBuffers } from './gpu-buffers.js';
import type { Kernel, KernelCache } from './kernels.js';
import type { ShaderDefines } from './shader-source.js';

const MAX_WORKGROUPS = 65535;

/** A slot's rows [begin, begin + rows) of a step. */
export interface Segment {
  slot: number;
  begin: number;
  rows: number;
  /** Cache rows its last row's query sees. */
  kvLength: number;
}

/** The shape of one forward step. */
export interface Step {
  nTokens: number;
  nOutputs: number;
  /** Token rows kept by output_rows, ascending. */
  outputs: Int32Array;
  segments: Segment[];
  /** In a per-slot dispatch's grid and condition: the segment's cache rows (see Segment). */
  kvLength: number;
}

export interface DispatchSpec {
  kind: 'dispatch';
  shader: string;
  defines: ShaderDefines;
  /** Buffers by binding name: one set, or one per slot. */
  resources: Array<Record<string, GPUBuffer>>;
  /** Run once per slot segment, with resources[slot], and grid and when see the segment as the step. */
  perSlot: boolean;
  params: (s: Step) => Record<string, number>;
  /** Workgroups: a count (laid out in 2-D when needed) or an explicit grid. */
  grid: (s: Step) => number | [number, number];
  /** Steps this dispatch runs in (default: all). */
  when?: (s: Step) => boolean;
}

/** output_rows: the kept rows, copied between two compute passes. */
export interface Copy {
  kind: 'copy';
  src: GPUBuffer;
  dst: GPUBuffer;
  cols: number;
}

export interface Dispatch extends Omit<DispatchSpec, 'resources' | 'shader' | 'defines'> {
  kernel: Kernel;
  bindGroups: GPUBindGroup[];
  /** Index of its parameter block in the uniform buffer. */
  block: number;
}

function grid2d(count: number): [number, number] {
  if (count <= MAX_WORKGROUPS) return [Math.max(count, 1), 1];
  return [MAX_WORKGROUPS, Math.ceil(count / MAX_WORKGROUPS)];
}

export class DispatchTable {
  private readonly dispatches: Dispatch[] = [];
  private shape = '';

  private constructor(
    private readonly device: GPUDevice,
    private readonly blockBytes: number,
    private readonly params: ArrayBuffer,
    private readonly uniform: GPUBuffer,
    readonly items: Array<Dispatch | Copy>,
  ) {}

  /**
   * Compiles every pipeline variant the specs name (concurrently, each once) and binds them. The
   * returned table's items follow `specs`; `extra` dispatches (run on request) come back apart.
   */
  static async create(device: GPUDevice, kernels: KernelCache, buffers: GpuBuffers, specs: Array<DispatchSpec | Copy>, extra: DispatchSpec[]) {
    const all = [...specs, ...extra];
    const compiled = await Promise.all(all.map((s) => (s.kind === 'dispatch' ? kernels.get(s.shader, s.defines) : undefined)));
    const blockBytes = Math.max(256, device.limits.minUniformBufferOffsetAlignment);
    const count = all.filter((s) => s.kind === 'dispatch').length;
    const uniform = buffers.uniform('params', Math.max(1, count) * blockBytes);
    let block = 0;
    const items = all.map((spec, i): Dispatch | Copy => {
      if (spec.kind === 'copy') return spec;
      const kernel = compiled[i]!;
      const at = block++;
      const bindGroups = spec.resources.map((r) =>
        device.createBindGroup({
          label: spec.shader,
          layout: kernel.layout,
          entries: kernel.source.bindings.map((b) => {
            if (b.kind === 'uniform') return { binding: b.binding, resource: { buffer: uniform, offset: at * blockBytes, size: kernel.paramsBytes } };
            const buffer = r[b.name];
            if (!buffer) throw new Error(`kiln: no buffer for binding '${b.name}' of ${spec.shader}.wgsl`);
            return { binding: b.binding, resource: { buffer } };
          }),
        }),
      );
      const { resources: _r, shader: _s, defines: _d, ...rest } = spec;
      return { ...rest, kernel, bindGroups, block: at };
    });
    const table = new DispatchTable(device, blockBytes, new ArrayBuffer(Math.max(1, count) * blockBytes), uniform, items.slice(0, specs.length));
    for (const item of items) if (item.kind === 'dispatch') table.dispatches.push(item);
    return { table, extra: items.slice(specs.length) as Dispatch[] };
  }

  /** Fills every parameter block for a step of this shape (once per shape). */
  writeParams(s: Step): void {
    const key = `${s.nTokens}/${s.nOutputs}`;
    if (key === this.shape) return;
    const u32 = new Uint32Array(this.params);
    const f32 = new Float32Array(this.params);
    const i32 = new Int32Array(this.params);
    for (const d of this.dispatches) {
      const values = d.params(s);
      const base = (d.block * this.blockBytes) / 4;
      d.kernel.source.params.forEach((p, i) => {
        const v = values[p.name];
        if (v === undefined) throw new Error(`kiln: parameter '${p.name}' of ${d.kernel.source.name}.wgsl has no value`);
        if (p.type === 'f32') f32[base + i] = v;
        else if (p.type === 'i32') i32[base + i] = v;
        else u32[base + i] = v;
      });
    }
    this.device.queue.writeBuffer(this.uniform, 0, this.params);
    this.shape = key;
  }

  /** Records the step's dispatches and copies into `encoder`. */
  record(encoder: GPUCommandEncoder, s: Step): void {
    let pass = encoder.beginComputePass();
    for (let i = 0; i < this.items.length; i++) {
      const item = this.items[i]!;
      if (item.kind === 'copy') {
        pass.end();
        copyRows(encoder, item, s.outputs);
        pass = encoder.beginComputePass();
      } else if (item.perSlot) {
        // A run of per-slot dispatches (one attention) runs whole for one segment before the next:
        // they share scratch such as the decode scores.
        let end = i + 1;
        while (end < this.items.length && this.items[end]!.kind === 'dispatch' && (this.items[end] as Dispatch).perSlot) end++;
        const run = this.items.slice(i, end) as Dispatch[];
        for (const g of s.segments) {
          const seg: Step = { ...s, nTokens: g.rows, kvLength: g.kvLength };
          for (const d of run) if (!d.when || d.when(seg)) DispatchTable.dispatch(pass, d, seg, d.bindGroups[g.slot]!);
        }
        i = end - 1;
      } else if (!item.when || item.when(s)) {
        DispatchTable.dispatch(pass, item, s, item.bindGroups[0]!);
      }
    }
    pass.end();
  }

  static dispatch(pass: GPUComputePassEncoder, d: Dispatch, s: Step, bindGroup: GPUBindGroup): void {
    const g = d.grid(s);
    // No workgroups: nothing to compute (the output rows of a step that wants none).
    if (typeof g === 'number' ? g === 0 : g[0] === 0 || g[1] === 0) return;
    const [x, y] = typeof g === 'number' ? grid2d(g) : g;
    pass.setPipeline(d.kernel.pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(x, y);
  }
}

/** output_rows: the kept rows in order, one copy per run of consecutive rows. */
function copyRows(encoder: GPUCommandEncoder, c: Copy, rows: Int32Array): void {
  const bytes = 4 * c.cols;
  for (let j = 0; j < rows.length; ) {
    let end = j + 1;
    while (end < rows.length && rows[end] === rows[end - 1]! + 1) end++;
    encoder.copyBufferToBuffer(c.src, rows[j]! * bytes, c.dst, j * bytes, (end - j) * bytes);
    j = end;
  }
}
