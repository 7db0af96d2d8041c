// The one part of the CPU backend's floating-point order that depends on the machine: F16 matrix
// products run in 16 lanes where the CPU has AVX-512 VNNI (native/cpu/mat-mul-avx512.cpp), in 8
// elsewhere. The WebGPU kernels follow the CPU backend of the machine they run on, so that the two
// backends give the same bits there.
import { native } from '../../native/binding.js';

export function f16DotLanes(): 8 | 16 {
  const f = native().cpuFeatures();
  return f.avx512Vnni && f.avx2 && f.fma && f.f16c ? 16 : 8;
}
