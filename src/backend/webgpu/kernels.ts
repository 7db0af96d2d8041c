// Compute pipelines, one per (shader, variant), compiled once with createComputePipelineAsync and
// shared by every node that uses the same variant.
/// <reference types="@webgpu/types" />
import type { GpuConstants } from './gpu-device.js';
import { type ShaderDefines, type ShaderSource, shaderSource } from './shader-source.js';

export interface Kernel {
  source: ShaderSource;
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
  /** Bytes of the Params uniform (16-byte aligned). */
  paramsBytes: number;
}

export class KernelCache {
  private readonly kernels = new Map<string, Promise<Kernel>>();

  constructor(private readonly device: GPUDevice, private readonly constants: GpuConstants) {}

  /** The pipeline for `name` with `defines`, compiling it on first request. */
  get(name: string, defines: ShaderDefines): Promise<Kernel> {
    const key = `${name}:${Object.keys(defines).sort().map((k) => `${k}=${defines[k]}`).join(',')}`;
    let kernel = this.kernels.get(key);
    if (!kernel) {
      kernel = this.compile(name, defines);
      this.kernels.set(key, kernel);
    }
    return kernel;
  }

  get size(): number {
    return this.kernels.size;
  }

  private async compile(name: string, defines: ShaderDefines): Promise<Kernel> {
    const source = shaderSource(name, defines);
    const module = this.device.createShaderModule({ label: name, code: source.code });
    const layout = this.device.createBindGroupLayout({
      label: name,
      entries: source.bindings.map((b) => ({ binding: b.binding, visibility: this.constants.GPUShaderStage.COMPUTE, buffer: { type: b.kind } })),
    });
    try {
      const pipeline = await this.device.createComputePipelineAsync({
        label: name,
        layout: this.device.createPipelineLayout({ bindGroupLayouts: [layout] }),
        compute: { module, entryPoint: 'main' },
      });
      return { source, pipeline, layout, paramsBytes: Math.ceil((source.params.length * 4) / 16) * 16 };
    } catch (e) {
      const info = await module.getCompilationInfo();
      const messages = info.messages.map((m) => `${m.type} at ${m.lineNum}:${m.linePos}: ${m.message}`).join('\n');
      throw new Error(`kiln: shader ${name}.wgsl (${JSON.stringify(defines)}) failed to compile: ${(e as Error).message}\n${messages}`);
    }
  }
}
