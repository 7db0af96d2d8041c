// The CUDA runtime API as kiln calls it, on the CPU, for the emulation (build.sh). One device;
// device memory is host memory; a stream's operations run when issued, or are recorded while the
// stream is captured and run again by each launch of the instantiated graph; events read the
// clock. Kernels run block by block, each block's threads as fibers: a thread runs until it
// reaches __syncthreads or a warp shuffle, then the next one runs.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "emu.h"

// Saves the callee-saved registers on the current stack, stores the stack pointer in *save, and
// continues on the stack at `load` (x86-64 System V).
extern "C" void emuSwitch(void** save, void* load);
asm(R"(
.text
.globl emuSwitch
.type emuSwitch,@function
emuSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
)");

namespace emu {

uint3 threadIndex, blockIndex;
dim3 blockSize, gridSize;

namespace {

constexpr size_t kStackBytes = 256 * 1024;

struct Fiber {
  void* sp = nullptr;
  uint3 index;
  bool done = false;
  std::vector<char> stack;
};

struct Block {
  std::vector<Fiber> fibers;
  int current = -1;
  void* schedulerSp = nullptr;
  const std::function<void()>* body = nullptr;
  int running = 0;               // threads not yet returned
  int arrived = 0;               // at the current __syncthreads
  uint64_t generation = 0;
  std::vector<int> warpArrived, warpRunning;
  std::vector<uint64_t> warpGeneration;
  std::vector<double> slots;     // one per thread, for shuffles
  std::vector<char> shared;      // dynamic shared memory
} block;

cudaError_t lastError = cudaSuccess;
bool capturing = false;
std::vector<std::function<void()>> captured;
std::map<const void*, int> sharedLimit;  // cudaFuncAttributeMaxDynamicSharedMemorySize

int linearIndex(uint3 t) { return (int)((t.z * blockSize.y + t.y) * blockSize.x + t.x); }

void yield() { emuSwitch(&block.fibers[block.current].sp, block.schedulerSp); }

void fiberMain() {
  (*block.body)();
  Fiber& f = block.fibers[block.current];
  f.done = true;
  block.running--;
  block.warpRunning[linearIndex(f.index) / 32]--;
  // A thread that returned no longer holds up __syncthreads.
  if (block.arrived > 0 && block.arrived == block.running) block.arrived = 0, block.generation++;
  emuSwitch(&f.sp, block.schedulerSp);
  __builtin_trap();  // a finished fiber is never resumed
}

void runBlock(const std::function<void()>& body) {
  const int n = (int)(blockSize.x * blockSize.y * blockSize.z);
  const int warps = (n + 31) / 32;
  block.fibers.resize(n);
  block.body = &body;
  block.running = n;
  block.arrived = 0;
  block.warpArrived.assign(warps, 0);
  block.warpRunning.assign(warps, 0);
  block.warpGeneration.assign(warps, 0);
  block.slots.assign((size_t)warps * 32, 0.0);
  for (int i = 0; i < n; i++) {
    Fiber& f = block.fibers[i];
    f.index = make_uint3(i % blockSize.x, (i / blockSize.x) % blockSize.y, i / (blockSize.x * blockSize.y));
    f.done = false;
    if (f.stack.size() != kStackBytes) f.stack.assign(kStackBytes, 0);
    // The first switch pops six registers and returns into fiberMain as if it had been called:
    // the return slot sits on a 16-byte boundary, so fiberMain starts with rsp % 16 == 8.
    const uintptr_t top = ((uintptr_t)(f.stack.data() + kStackBytes) & ~(uintptr_t)15) - 32;
    void** frame = reinterpret_cast<void**>(top) - 6;
    for (int r = 0; r < 6; r++) frame[r] = nullptr;
    frame[6] = reinterpret_cast<void*>(&fiberMain);
    f.sp = frame;
    block.warpRunning[i / 32]++;
  }
  for (bool any = true; any;) {
    any = false;
    for (int i = 0; i < n; i++) {
      if (block.fibers[i].done) continue;
      any = true;
      block.current = i;
      threadIndex = block.fibers[i].index;
      emuSwitch(&block.schedulerSp, block.fibers[i].sp);
    }
  }
  block.current = -1;
}

void runKernel(dim3 grid, dim3 threads, size_t shared, const std::function<void()>& body) {
  gridSize = grid;
  blockSize = threads;
  block.shared.assign(shared + 64, 0);
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        blockIndex = make_uint3(x, y, z);
        runBlock(body);
      }
}

// Both halves of a warp-wide exchange: every lane of the warp must arrive, as on the GPU.
void warpBarrier(int warp) {
  if (block.warpRunning[warp] != 32) {
    fprintf(stderr, "emulation: a warp shuffle with %d of 32 lanes running\n", block.warpRunning[warp]);
    abort();
  }
  const uint64_t generation = block.warpGeneration[warp];
  if (++block.warpArrived[warp] == 32) {
    block.warpArrived[warp] = 0;
    block.warpGeneration[warp]++;
  } else {
    while (block.warpGeneration[warp] == generation) yield();
  }
}

template <typename T>
T exchange(T v, int lane, bool xorLanes) {
  const int self = linearIndex(block.fibers[block.current].index), warp = self / 32;
  block.slots[self] = (double)v;
  warpBarrier(warp);
  const T r = (T)block.slots[warp * 32 + (xorLanes ? ((self % 32) ^ lane) : (lane & 31))];
  warpBarrier(warp);
  return r;
}

}  // namespace

void syncThreads() {
  const uint64_t generation = block.generation;
  if (++block.arrived == block.running) {
    block.arrived = 0;
    block.generation++;
    return;
  }
  while (block.generation == generation) yield();
}

float shuffle(float v, int lane, bool xorLanes) { return exchange(v, lane, xorLanes); }
int shuffle(int v, int lane, bool xorLanes) { return exchange(v, lane, xorLanes); }
double shuffle(double v, int lane, bool xorLanes) { return exchange(v, lane, xorLanes); }
void* dynamicShared() { return block.shared.data(); }

void launch(dim3 grid, dim3 threads, size_t shared, cudaStream_t, const void* kernel, std::function<void()> body) {
  const unsigned n = threads.x * threads.y * threads.z;
  const auto limit = sharedLimit.find(kernel);
  const size_t maxShared = limit == sharedLimit.end() ? 48 * 1024 : (size_t)limit->second;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535 || n == 0 || n > 1024 || shared > maxShared) {
    fprintf(stderr, "emulation: bad launch: grid (%u, %u, %u), block (%u, %u, %u), %zu bytes of shared memory\n", grid.x,
            grid.y, grid.z, threads.x, threads.y, threads.z, shared);
    lastError = cudaErrorInvalidConfiguration;
    return;
  }
  if (capturing) captured.push_back([=] { runKernel(grid, threads, shared, body); });
  else runKernel(grid, threads, shared, body);
}

namespace {

void streamOperation(std::function<void()> op) {
  if (capturing) captured.push_back(std::move(op));
  else op();
}

struct Graph {
  std::vector<std::function<void()>> operations;
};

void* allocate(size_t bytes) { return aligned_alloc(256, (bytes + 255) / 256 * 256); }

}  // namespace

}  // namespace emu

using namespace emu;

extern "C" {

cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDeviceProperties_v2(cudaDeviceProp* p, int) {
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->name, "CPU emulation");
  p->major = 9;
  p->minor = 0;
  p->totalGlobalMem = size_t{8} << 30;
  p->multiProcessorCount = 1;
  p->memoryBusWidth = 64;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) { return cudaGetDeviceProperties_v2(p, d); }
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) { *v = 1000; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int* v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int* v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void*) { std::memset(a, 0, sizeof *a); return cudaSuccess; }
cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attr, int v) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (v > 227 * 1024) return cudaErrorInvalidValue;  // an H100's most
    sharedLimit[kernel] = v;
  }
  return cudaSuccess;
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = lastError;
  lastError = cudaSuccess;
  return e;
}
const char* cudaGetErrorString(cudaError_t e) {
  static char text[64];
  snprintf(text, sizeof text, "emulated CUDA error %d", (int)e);
  return text;
}
cudaError_t cudaMemGetInfo(size_t* free, size_t* total) { *free = size_t{6} << 30; *total = size_t{8} << 30; return cudaSuccess; }
cudaError_t cudaMalloc(void** p, size_t n) {
  *p = allocate(n);
  if (!*p) return cudaErrorMemoryAllocation;
  std::memset(*p, 0xcd, n);  // device memory starts as garbage: reading it before writing shows
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) { free(p); return cudaSuccess; }
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned) { *p = allocate(n); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
cudaError_t cudaFreeHost(void* p) { free(p); return cudaSuccess; }
cudaError_t cudaMemset(void* p, int v, size_t n) { std::memset(p, v, n); return cudaSuccess; }
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind) {
  if (capturing) return cudaErrorStreamCaptureImplicit;
  std::memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t) {
  streamOperation([=] { std::memmove(dst, src, n); });
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { *s = reinterpret_cast<cudaStream_t>(new int(0)); return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) { delete reinterpret_cast<int*>(s); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return capturing ? cudaErrorStreamCaptureUnsupported : cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = reinterpret_cast<cudaEvent_t>(new double(0)); return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) { delete reinterpret_cast<double*>(e); return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  double* at = reinterpret_cast<double*>(e);
  streamOperation([at] { *at = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); });
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = (float)(*reinterpret_cast<double*>(b) - *reinterpret_cast<double*>(a));
  return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  if (capturing) return cudaErrorIllegalState;
  capturing = true;
  captured.clear();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* g) {
  if (!capturing) return cudaErrorIllegalState;
  capturing = false;
  *g = reinterpret_cast<cudaGraph_t>(new Graph{std::move(captured)});
  captured.clear();
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long) {
  *e = reinterpret_cast<cudaGraphExec_t>(new Graph(*reinterpret_cast<Graph*>(g)));
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) { delete reinterpret_cast<Graph*>(g); return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { delete reinterpret_cast<Graph*>(e); return cudaSuccess; }
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t) {
  if (capturing) return cudaErrorStreamCaptureUnsupported;
  for (auto& op : reinterpret_cast<Graph*>(e)->operations) op();
  return cudaSuccess;
}

}  // extern "C"
