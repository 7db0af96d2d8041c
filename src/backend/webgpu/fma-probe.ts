// Whether the device's WGSL fma() rounds once, as the CPU's FMA instructions do. WGSL allows it to
// round the product first, and lavapipe does (Mesa's llvmpipe lowers it to a multiply and an add);
// the kernels then compute the fused result in ordinary arithmetic (shaders/include/fma.wgsl).
/// <reference types="@webgpu/types" />
import type { GpuConstants } from './gpu-device.js';

const PROBE = `
@group(0) @binding(0) var<storage, read_write> v: array<f32, 4>;
@compute @workgroup_size(1) fn main() { v[3] = fma(v[0], v[1], v[2]); }`;

/** Runs fma(a, a, c) on values whose product's rounding decides the result: 2^-24 when fused, 0 when not. */
export async function fmaIsFused(device: GPUDevice, constants: GpuConstants): Promise<boolean> {
  const a = 1 + 2 ** -12;
  const values = Float32Array.of(a, a, -(1 + 2 ** -11), 0);
  const { GPUBufferUsage: U, GPUMapMode } = constants;
  const buffer = device.createBuffer({ label: 'fma probe', size: 16, usage: U.STORAGE | U.COPY_SRC | U.COPY_DST });
  const readback = device.createBuffer({ label: 'fma probe readback', size: 16, usage: U.MAP_READ | U.COPY_DST });
  try {
    device.queue.writeBuffer(buffer, 0, values);
    const pipeline = await device.createComputePipelineAsync({
      label: 'fma probe',
      layout: 'auto',
      compute: { module: device.createShaderModule({ label: 'fma probe', code: PROBE }), entryPoint: 'main' },
    });
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer } }] }));
    pass.dispatchWorkgroups(1);
    pass.end();
    encoder.copyBufferToBuffer(buffer, 0, readback, 0, 16);
    device.queue.submit([encoder.finish()]);
    await readback.mapAsync(GPUMapMode.READ);
    const result = new Float32Array(readback.getMappedRange())[3]!;
    readback.unmap();
    return result === 2 ** -24;
  } finally {
    buffer.destroy();
    readback.destroy();
  }
}
