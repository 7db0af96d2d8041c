// Workers spin briefly for the next op (ops follow each other within microseconds during a
// forward step), then sleep on a condition variable so an idle runtime costs no CPU.
//
// parallelFor hands out chunks through one atomic ticket, generation and next chunk together, so
// a claim can only succeed for the op it was meant for: a worker that wakes after its op is over
// finds the generation changed and joins the current op instead, and the caller never waits for
// a thread that has not started. The op's description sits in one of two slots by generation
// parity; a late worker may read a newer op's slot, but its claim then fails, and the slot of an op
// with a claimed chunk cannot be reused before that chunk is done.
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
// Lines an idle thread asks for between two looks for work (a look is one atomic load).
constexpr size_t kPrefetchStep = 4 * 64;

inline void backoff(int iteration) {
  if (iteration < kSpinIterations) {
    KILN_PAUSE();
  } else {
    std::this_thread::yield();
  }
}

constexpr uint32_t generationOf(uint64_t ticket) { return (uint32_t)(ticket >> 32); }
constexpr uint32_t chunkOf(uint64_t ticket) { return (uint32_t)ticket; }
}  // namespace

ThreadPool::ThreadPool(int nThreads) : nThreads_(nThreads < 1 ? 1 : nThreads), idle_(nThreads_), runs_(nThreads_) {
  workers_.reserve(nThreads_ - 1);
  for (int i = 1; i < nThreads_; i++) workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  publish(generationOf(ticket_.load()) + 1);
  for (auto& t : workers_) t.join();
}

// Starts generation g (its job slot already filled) and wakes sleeping workers. ticket_ and
// sleepers_ are sequentially consistent: a worker going to sleep either sees the new ticket or is
// counted here.
void ThreadPool::publish(uint32_t g) {
  done_.store(0, std::memory_order_relaxed);
  ticket_.store((uint64_t)g << 32);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
}

void ThreadPool::prefetchWhileIdle(const char* const* spans, const size_t* bytes) {
  for (int t = 0; t < nThreads_; t++) {
    IdleSpan& s = idle_[t];
    s.data.store(spans[t], std::memory_order_relaxed);
    s.bytes.store(spans[t] ? bytes[t] : 0, std::memory_order_relaxed);
    s.id.fetch_add(1, std::memory_order_release);
  }
}

bool ThreadPool::prefetchSome(int ith) {
  IdleSpan& s = idle_[ith];
  const uint32_t id = s.id.load(std::memory_order_acquire);
  if (id != s.seen) {
    s.seen = id;
    s.done = 0;
  }
  const char* data = s.data.load(std::memory_order_relaxed);
  const size_t bytes = s.bytes.load(std::memory_order_relaxed);
  if (!data || s.done >= bytes) return false;
  for (size_t b = 0; b < kPrefetchStep; b += 64) __builtin_prefetch(data + s.done + b);
  s.done += kPrefetchStep;
  return true;
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (nThreads_ == 1) {
    fn(0, 1);
    return;
  }
  const uint32_t g = generationOf(ticket_.load(std::memory_order_relaxed)) + 1;
  Job& job = jobs_[g & 1];
  job.chunks.store(nullptr, std::memory_order_release);
  job.each.store(&fn, std::memory_order_release);
  publish(g);
  fn(0, nThreads_);
  for (int i = 0; done_.load(std::memory_order_acquire) != nThreads_ - 1; i++) backoff(i);
}

// Claims and runs chunks of generation g until none are left; returns how many this thread ran.
int64_t ThreadPool::takeChunks(uint32_t g, const Job& job, int thread) {
  const auto* fn = job.chunks.load(std::memory_order_acquire);
  const int64_t n = job.nChunks.load(std::memory_order_acquire);
  int64_t ran = 0;
  uint64_t t = ticket_.load(std::memory_order_acquire);
  while (generationOf(t) == g && chunkOf(t) < n) {
    if (ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      (*fn)(chunkOf(t), thread);
      ran++;
      t = ticket_.load(std::memory_order_acquire);
    }
  }
  return ran;
}

void ThreadPool::parallelFor(int64_t nChunks, const std::function<void(int64_t, int)>& fn) {
  if (nChunks <= 0) return;
  if (nThreads_ == 1 || nChunks == 1) {
    for (int64_t c = 0; c < nChunks; c++) fn(c, 0);
    return;
  }
  const uint32_t g = generationOf(ticket_.load(std::memory_order_relaxed)) + 1;
  Job& job = jobs_[g & 1];
  job.each.store(nullptr, std::memory_order_release);
  job.chunks.store(&fn, std::memory_order_release);
  job.nChunks.store(nChunks, std::memory_order_release);
  publish(g);
  const int64_t mine = takeChunks(g, job, 0);
  done_.fetch_add(mine, std::memory_order_acq_rel);
  while (done_.load(std::memory_order_acquire) != nChunks && prefetchSome(0)) {
  }
  for (int i = 0; done_.load(std::memory_order_acquire) != nChunks; i++) backoff(i);
}

int64_t ThreadPool::claimFromRuns(int ith) {
  // Every claimed ticket stands for one unclaimed chunk, so some run still holds one: look until
  // it is found (another thread may take the one seen first).
  for (;;) {
    std::atomic<uint64_t>& own = runs_[ith].span;
    uint64_t s = own.load(std::memory_order_relaxed);
    while ((uint32_t)s < (uint32_t)(s >> 32))
      if (own.compare_exchange_weak(s, s + 1, std::memory_order_relaxed)) return (uint32_t)s;
    for (int k = 1; k < nThreads_; k++) {
      std::atomic<uint64_t>& other = runs_[(ith + k) % nThreads_].span;
      uint64_t o = other.load(std::memory_order_relaxed);
      while ((uint32_t)o < (uint32_t)(o >> 32))
        if (other.compare_exchange_weak(o, o - (uint64_t{1} << 32), std::memory_order_relaxed)) return (uint32_t)(o >> 32) - 1;
    }
  }
}

void ThreadPool::parallelForRuns(int64_t nChunks, const int64_t* starts, const std::function<void(int64_t, int)>& fn) {
  if (nThreads_ == 1 || nChunks <= 1) {
    parallelFor(nChunks, fn);
    return;
  }
  // Published with the op (publish's ticket store releases them).
  for (int t = 0; t < nThreads_; t++)
    runs_[t].span.store((uint64_t)starts[t + 1] << 32 | (uint64_t)starts[t], std::memory_order_relaxed);
  parallelFor(nChunks, [this, &fn](int64_t, int ith) { fn(claimFromRuns(ith), ith); });
}

void ThreadPool::workerLoop(int ith) {
  uint32_t seen = 0;
  for (;;) {
    uint64_t t = ticket_.load(std::memory_order_acquire);
    while (generationOf(t) == seen && prefetchSome(ith)) t = ticket_.load(std::memory_order_acquire);
    for (int i = 0; generationOf(t) == seen && i < kSpinIterations + kYieldIterations; i++) {
      backoff(i);
      t = ticket_.load(std::memory_order_acquire);
    }
    if (generationOf(t) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return generationOf(ticket_.load()) != seen; });
      sleepers_.fetch_sub(1);
      t = ticket_.load(std::memory_order_acquire);
    }
    const uint32_t g = generationOf(t);
    if (stop_.load()) return;
    const Job& job = jobs_[g & 1];
    if (const auto* each = job.each.load(std::memory_order_acquire)) {
      // A run() job: if the generation is still g, the slot is g's, and the caller waits for
      // every worker, so it stays g's until this one is done. Otherwise look again.
      if (generationOf(ticket_.load(std::memory_order_acquire)) != g) continue;
      seen = g;
      (*each)(ith, nThreads_);
      done_.fetch_add(1, std::memory_order_acq_rel);
    } else {
      seen = g;
      const int64_t ran = takeChunks(g, job, ith);
      if (ran > 0) done_.fetch_add(ran, std::memory_order_acq_rel);
    }
  }
}

}  // namespace kiln
