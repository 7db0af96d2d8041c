// A persistent pool: threads are started once per plan and woken per op, never per token.
#pragma once
#include <atomic>
#include <condition_variable>
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
  // fn must not throw.
  void run(const std::function<void(int ith, int nth)>& fn);

 private:
  void workerLoop(int ith);

  const int nThreads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace kiln
