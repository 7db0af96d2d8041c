// Without a usable CUDA device (the CI machine: nvcc but no GPU), asking for the CUDA backend fails
// with a typed error that says why, and 'auto' falls back to the CPU. Skipped where a device exists.
import { describe, expect, it } from 'vitest';
import { cudaDevices } from '../../src/backend/cuda/cuda-backend.js';
import { CudaUnavailableError } from '../../src/backend/cuda/errors.js';
import { Runtime } from '../../src/index.js';
import { native } from '../../src/native/binding.js';
import { MODELS } from '../helpers/paths.js';

const hasDevice = cudaDevices().devices.length > 0;

describe.skipIf(hasDevice)(`no CUDA device${hasDevice ? ' (skipped: a device is present)' : ''}`, () => {
  it('cudaDevices() is empty and says why', () => {
    const list = cudaDevices();
    expect(list.devices).toEqual([]);
    expect(list.reason).toMatch(/CUDA/);
  });

  it("backend 'cuda' is refused with CudaUnavailableError", async () => {
    const err = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, backend: 'cuda' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CudaUnavailableError);
    expect((err as CudaUnavailableError).code).toBe('cuda_unavailable');
    expect((err as Error).message).toContain(cudaDevices().reason!);
  });

  it('the native CudaPlan refuses to be built rather than crash', () => {
    expect(() => new (native().CudaPlan)({ tensors: [], nodes: [], output: 0 }, { threads: 1, slots: 1, contextSize: 8, maxBatch: 1, kvType: 0, device: 0 })).toThrow();
  });

  it("backend 'auto' runs on the CPU", async () => {
    const rt = await Runtime.load({ model: `${MODELS}/stories260K.gguf`, backend: 'auto', threads: 1 });
    try {
      expect(rt.info.backend).toBe('cpu');
      expect((await rt.complete({ prompt: 'Once upon a time', maxTokens: 5, temperature: 0 })).tokens).toHaveLength(5);
    } finally {
      await rt.close();
    }
  });
});
