// What the CPU can do, read once from CPUID (x86) or compile-time macros (ARM).
#pragma once

namespace kiln {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  // AVX-512 BW, VL and VNNI together with F: what the *-avx512.cpp kernels need.
  bool avx512Vnni = false;
  bool avxVnni = false;
  bool neon = false;
  int logicalCores = 1;
  int physicalCores = 1;
  // The L1 data cache of one core, in bytes (32 KB where the OS does not say).
  int l1dBytes = 32 * 1024;
};

const CpuFeatures& cpuFeatures();

}  // namespace kiln
