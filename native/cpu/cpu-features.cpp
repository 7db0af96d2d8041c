// CPU feature detection: kernels are chosen at run time so one binary runs on any x86-64.
#include "cpu-features.h"

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include <unistd.h>

namespace kiln {

namespace {

// Counts distinct (physical id, core id) pairs; falls back to logical cores.
int countPhysicalCores(int logical) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) return logical;
  std::set<std::pair<int, int>> cores;
  std::string line;
  int physId = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = line.substr(colon + 1);
    if (key == "physical id") physId = std::atoi(value.c_str());
    if (key == "core id") cores.insert({physId, std::atoi(value.c_str())});
  }
  return cores.empty() ? logical : static_cast<int>(cores.size());
}

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512Vnni = f.avx512f && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                 __builtin_cpu_supports("avx512vnni");
#ifdef KILN_EMULATED_AVX512  // the tests' emulated build (CMakeLists.txt): AVX-512 by SIMDe, on AVX2
  f.avx512f = f.avx512Vnni = f.avx2 && f.fma;
#endif
  unsigned eax, ebx, ecx, edx;
  __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(1), "c"(0));
  f.f16c = (ecx >> 29) & 1;
  __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(1));
  f.avxVnni = (eax >> 4) & 1;
#endif
#if defined(__ARM_NEON)
  f.neon = true;
#endif
  const unsigned hw = std::thread::hardware_concurrency();
  f.logicalCores = hw > 0 ? static_cast<int>(hw) : 1;
  f.physicalCores = countPhysicalCores(f.logicalCores);
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (l1d >= 4096) f.l1dBytes = static_cast<int>(l1d);
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpuFeatures() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace kiln
