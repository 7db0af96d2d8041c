// The WebGPU backend: WGSL compute shaders through Dawn, on Vulkan, Metal or D3D12 (or a software
// Vulkan driver such as lavapipe). Same graph as the CPU backend.
import type { Graph } from '../../model/graph.js';
import type { Backend, CompileOptions } from '../backend.js';
import { WebGpuUnavailableError } from './errors.js';
import { type AdapterChoice, type AdapterSummary, findAdapter } from './gpu-device.js';
import { planGraph } from './plan.js';
import { WebGpuGraph, type WebGpuTuning } from './webgpu-graph.js';

export type WebGpuBackendOptions = AdapterChoice & WebGpuTuning;

export class WebGpuBackend implements Backend {
  readonly name = 'webgpu' as const;
  /** The adapter the last compile ran on. */
  adapter: AdapterSummary | undefined;

  constructor(private readonly options: WebGpuBackendOptions = {}) {}

  async compile(graph: Graph, options: CompileOptions): Promise<WebGpuGraph> {
    const plan = planGraph(graph, options);
    const ctx = await findAdapter(this.options);
    if ('reason' in ctx) throw new WebGpuUnavailableError(`The WebGPU backend has no adapter: ${ctx.reason}. Use backend: 'cpu'.`);
    this.adapter = ctx.summary;
    return WebGpuGraph.create(ctx, plan, options, this.options);
  }
}

/** Whether `backend: 'auto'` should use WebGPU: a hardware adapter exists (never a software one). */
export async function hardwareWebGpuAvailable(): Promise<boolean> {
  const ctx = await findAdapter({ allowSoftware: false });
  if ('reason' in ctx) return false;
  ctx.release();
  return true;
}
