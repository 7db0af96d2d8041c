// The WebGPU adapter the GPU tests run on (lavapipe in CI), found once per test file. With none,
// the tests skip and say why in their names.
import { findAdapter } from '../../src/backend/webgpu/gpu-device.js';
import type { WebGpuBackendOptions } from '../../src/backend/webgpu/webgpu-backend.js';

const found = await findAdapter();

export const skipReason: string | undefined = 'reason' in found ? found.reason : undefined;
if (skipReason) console.warn(`test/gpu: WebGPU tests skipped: ${skipReason}`);
export const adapterSummary = 'reason' in found ? undefined : found.summary;
if (!('reason' in found)) found.release();

/** A suite title that says when and why it is skipped. */
export const title = (name: string): string => (skipReason ? `${name} (skipped: ${skipReason})` : name);

/** The feature paths the adapter can run: everything it has, then the fallbacks without them. */
export const featureConfigs: Array<{ name: string; options: WebGpuBackendOptions }> = [
  { name: adapterSummary ? `${adapterSummary.f16 ? 'f16' : 'no f16'}, ${adapterSummary.subgroups ? 'subgroups' : 'no subgroups'}` : 'default', options: {} },
  ...(adapterSummary && (adapterSummary.f16 || adapterSummary.subgroups)
    ? [{ name: 'fallbacks (no f16, no subgroups)', options: { disableF16: true, disableSubgroups: true } }]
    : []),
];
