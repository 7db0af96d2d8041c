// A persistent pool: threads are started once per plan and woken per op, never per token.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

class ThreadPool {
 public:
  explicit ThreadPool(int nThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return nThreads_; }

  // Runs fn(ith, nth) on every thread, the caller being thread 0, and returns when all are done.
  // For work that needs every thread at once (the machine probes). fn must not throw.
  void run(const std::function<void(int ith, int nth)>& fn);

  // Runs fn(chunk, thread) once for every chunk in [0, nChunks), on whichever threads take part:
  // the caller, and each worker that wakes up before the chunks run out. Returns when every chunk
  // is done. A worker the OS has not scheduled in time (a busy machine) holds nothing up: the
  // others do its share. One chunk runs on the caller without waking anyone. `thread` (0 for the
  // caller) indexes per-thread scratch. fn must not throw.
  void parallelFor(int64_t nChunks, const std::function<void(int64_t chunk, int thread)>& fn);

  // parallelFor, except that each thread works through a run of consecutive chunks of its own, in
  // order (thread t's: [starts[t], starts[t + 1]), size() + 1 ascending entries from 0 to nChunks),
  // and once they are done takes the others' from their ends. For chunks that lie one after
  // another in memory: each thread reads one stream, which the hardware prefetcher follows across
  // the chunks' boundaries, where parallelFor's threads take turns and restart a stream at every
  // chunk. A thread that starts late still has its run done by the others.
  void parallelForRuns(int64_t nChunks, const int64_t* starts, const std::function<void(int64_t chunk, int thread)>& fn);

  // Memory for idle threads to ask for: from now on, thread t asks for the cache lines of
  // [spans[t], spans[t] + bytes[t]) while it has nothing to do: the caller while it waits in
  // parallelFor for the others, a worker between ops. Each span is asked for once, in order, a few
  // lines at a time between looks for work, so no op waits on it. A decode step gives each thread
  // the start of the next product's chunk it will most likely take (see Plan::prefetchWhileIdle).
  // `spans` and `bytes` hold size() entries; a null span or 0 bytes asks for nothing.
  void prefetchWhileIdle(const char* const* spans, const size_t* bytes);

 private:
  // An op as the workers see it, in one of two slots by generation parity (see the .cpp).
  struct Job {
    std::atomic<const std::function<void(int, int)>*> each{nullptr};
    std::atomic<const std::function<void(int64_t, int)>*> chunks{nullptr};
    std::atomic<int64_t> nChunks{0};
  };

  void publish(uint32_t generation);
  int64_t takeChunks(uint32_t generation, const Job& job, int thread);
  void workerLoop(int ith);
  // The next chunk of thread ith's run, or the last one left of another thread's run.
  int64_t claimFromRuns(int ith);
  // Asks for the next lines of thread ith's idle span, if any are left; false when none are.
  bool prefetchSome(int ith);

  // A thread's idle span (prefetchWhileIdle), and how far it has got: `id` counts the calls, so a
  // thread sees a new span and starts it from the beginning. Atomic since the caller sets them while
  // workers read; a mixed read can only ask for lines nobody needs.
  struct alignas(64) IdleSpan {
    std::atomic<const char*> data{nullptr};
    std::atomic<size_t> bytes{0};
    std::atomic<uint32_t> id{0};
    uint32_t seen = 0;  // the thread's own
    size_t done = 0;    // the thread's own
  };

  // parallelForRuns' runs: the next chunk in the low 32 bits, the end in the high 32. Reset by the
  // caller before each op is published; a worker touches them only while it holds a claimed chunk.
  struct alignas(64) Run {
    std::atomic<uint64_t> span{0};
  };

  const int nThreads_;
  std::vector<std::thread> workers_;
  Job jobs_[2];
  // Generation in the high 32 bits, the next unclaimed chunk in the low 32.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<bool> stop_{false};
  std::vector<IdleSpan> idle_;
  std::vector<Run> runs_;
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace kiln
