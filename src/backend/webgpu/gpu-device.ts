// Finding a WebGPU adapter through Dawn (the `webgpu` package) and opening a device on it with the
// features kiln uses when present (shader-f16, subgroups) and the limits a model needs.
/// <reference types="@webgpu/types" />
import { WebGpuLimitError, WebGpuUnavailableError } from './errors.js';

/** The numeric flags of the WebGPU API, which Dawn exports rather than defining globally. */
export interface GpuConstants {
  GPUBufferUsage: { MAP_READ: number; COPY_SRC: number; COPY_DST: number; UNIFORM: number; STORAGE: number };
  GPUMapMode: { READ: number };
  GPUShaderStage: { COMPUTE: number };
}

export interface AdapterChoice {
  /** Accept a software (fallback) adapter such as lavapipe. Default true. */
  allowSoftware?: boolean;
  /** Turn off shader-f16 even where the adapter has it (tests cover both paths). */
  disableF16?: boolean;
  /** Turn off subgroups even where the adapter has them. */
  disableSubgroups?: boolean;
}

export interface AdapterSummary {
  description: string;
  software: boolean;
  f16: boolean;
  subgroups: boolean;
  subgroupMinSize: number;
  subgroupMaxSize: number;
}

export interface GpuContext {
  /** Dawn's instance, shared; the process stays alive until every context is released. */
  gpu: GPU;
  constants: GpuConstants;
  adapter: GPUAdapter;
  summary: AdapterSummary;
  /** WGSL has dot4I8Packed. */
  dot4: boolean;
  /** Gives up this context's hold on the instance (once; later calls do nothing). */
  release(): void;
}

interface DawnModule {
  create(options: string[]): GPU;
  globals: GpuConstants;
}

async function loadDawn(): Promise<DawnModule> {
  try {
    return (await import('webgpu')) as unknown as DawnModule;
  } catch (cause) {
    throw new WebGpuUnavailableError(
      `The WebGPU backend needs the 'webgpu' package (Dawn), which could not be loaded: ${(cause as Error).message}. ` +
        `Reinstall kiln's dependencies, or use backend: 'cpu'.`,
      { cause },
    );
  }
}

const SOFTWARE_NAMES = /llvmpipe|lavapipe|swiftshader|software|microsoft basic render|warp/i;

function summarize(adapter: GPUAdapter, choice: AdapterChoice, gpu: GPU): AdapterSummary {
  const info = adapter.info;
  const description = [info.vendor, info.architecture, info.description || info.device].filter(Boolean).join(' ') || 'unknown adapter';
  const legacyFallback = (adapter as unknown as { isFallbackAdapter?: boolean }).isFallbackAdapter;
  const software = info.isFallbackAdapter === true || legacyFallback === true || info.architecture === 'software' || SOFTWARE_NAMES.test(description);
  // Subgroup reductions need the subgroup_id builtin to combine subgroups of a workgroup.
  const subgroups = !choice.disableSubgroups && adapter.features.has('subgroups') && gpu.wgslLanguageFeatures.has('subgroup_id');
  return {
    description,
    software,
    f16: !choice.disableF16 && adapter.features.has('shader-f16'),
    subgroups,
    subgroupMinSize: info.subgroupMinSize ?? 0,
    subgroupMaxSize: info.subgroupMaxSize ?? 0,
  };
}

// One Dawn instance per process, shared by every compiled graph and probe: each instance enumerates
// the adapters again, and a referenced instance keeps the process alive, so it is dropped when
// its last user releases it.
let shared: { gpu: GPU; users: number } | undefined;

function acquireGpu(dawn: DawnModule): GPU {
  shared ??= { gpu: dawn.create([]), users: 0 };
  shared.users++;
  return shared.gpu;
}

function releaseGpu(): void {
  if (shared && --shared.users === 0) shared = undefined;
}

/** The adapter kiln would use, or why there is none. Never throws for a missing GPU. */
export async function findAdapter(choice: AdapterChoice = {}): Promise<GpuContext | { reason: string }> {
  let dawn: DawnModule;
  try {
    dawn = await loadDawn();
  } catch (e) {
    return { reason: (e as Error).message };
  }
  const gpu = acquireGpu(dawn);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' }).catch(() => null);
  const none = (reason: string) => {
    releaseGpu();
    return { reason };
  };
  if (!adapter) {
    return none(
      'no WebGPU adapter: Dawn found no Vulkan, Metal or D3D12 device. On Linux without a GPU, ' +
        'install a software Vulkan driver Dawn accepts: eval "$(bash scripts/setup-lavapipe.sh)"',
    );
  }
  const summary = summarize(adapter, choice, gpu);
  if (summary.software && choice.allowSoftware === false) return none(`only a software adapter (${summary.description}) is present`);
  let released = false;
  const release = () => {
    if (!released) releaseGpu();
    released = true;
  };
  return { gpu, constants: dawn.globals, adapter, summary, dot4: gpu.wgslLanguageFeatures.has('packed_4x8_integer_dot_product'), release };
}

export interface DeviceNeeds {
  /** Largest single binding, in bytes, and what needs it. */
  binding: { bytes: number; what: string };
  /** Largest single buffer, in bytes, and what needs it. */
  buffer: { bytes: number; what: string };
}

const ADVICE = 'Use a smaller context (contextSize), fewer slots, maxBatch or an f16 KV cache, or backend: \'cpu\'.';

/** Opens a device with the features in `ctx.summary` and the limits in `needs`, or says which limit fails. */
export async function openDevice(ctx: GpuContext, needs: DeviceNeeds): Promise<GPUDevice> {
  const limits = ctx.adapter.limits;
  const need = (limit: 'maxStorageBufferBindingSize' | 'maxBufferSize', n: { bytes: number; what: string }): number => {
    if (n.bytes > limits[limit]) throw new WebGpuLimitError(limit, n.bytes, limits[limit], n.what, ADVICE);
    return Math.max(n.bytes, 0);
  };
  const requiredLimits: Record<string, number> = {
    maxStorageBufferBindingSize: Math.max(need('maxStorageBufferBindingSize', needs.binding), 128 << 20),
    maxBufferSize: Math.max(need('maxBufferSize', needs.buffer), 256 << 20),
  };
  // The defaults of the spec are the floor; never ask for more than the adapter has.
  for (const key of Object.keys(requiredLimits)) requiredLimits[key] = Math.min(requiredLimits[key]!, limits[key as keyof GPUSupportedLimits] as number);
  const requiredFeatures: GPUFeatureName[] = [];
  if (ctx.summary.f16) requiredFeatures.push('shader-f16');
  if (ctx.summary.subgroups) requiredFeatures.push('subgroups' as GPUFeatureName);
  try {
    return await ctx.adapter.requestDevice({ requiredFeatures, requiredLimits });
  } catch (cause) {
    throw new WebGpuUnavailableError(`Opening a WebGPU device on ${ctx.summary.description} failed: ${(cause as Error).message}`, { cause });
  }
}
