// Workers spin briefly for the next op (ops follow each other within microseconds during a
// forward step), then sleep on a condition variable so an idle runtime costs no CPU.
#include "thread-pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_PAUSE() _mm_pause()
#else
#define KILN_PAUSE() std::this_thread::yield()
#endif

namespace kiln {

namespace {
// Spin briefly (the next op is microseconds away during a forward step), then yield the core so a
// descheduled peer can run on a busy machine, then sleep so an idle runtime costs no CPU.
constexpr int kSpinIterations = 2000;
constexpr int kYieldIterations = 20000;

inline void backoff(int iteration) {
  if (iteration < kSpinIterations) {
    KILN_PAUSE();
  } else {
    std::this_thread::yield();
  }
}
}  // namespace

ThreadPool::ThreadPool(int nThreads) : nThreads_(nThreads < 1 ? 1 : nThreads) {
  workers_.reserve(nThreads_ - 1);
  for (int i = 1; i < nThreads_; i++) workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (nThreads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(nThreads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load() > 0) wake_.notify_all();
  fn(0, nThreads_);
  for (int i = 0; pending_.load(std::memory_order_acquire) != 0; i++) backoff(i);
  job_ = nullptr;
}

void ThreadPool::workerLoop(int ith) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int i = 0; gen == seen && i < kSpinIterations + kYieldIterations; i++) {
      backoff(i);
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      sleepers_.fetch_sub(1);
      gen = generation_.load();
    }
    seen = gen;
    if (stop_.load()) return;
    (*job_)(ith, nThreads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace kiln
