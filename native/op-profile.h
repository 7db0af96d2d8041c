// Wall time of a plan's ops, step by step: where a forward step's time goes (which products reach
// the memory's speed, what the ops between them cost). Process-wide and off unless a bench turns
// it on, so a step pays one relaxed load for it.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {

// One label's totals: the ops of every layer that do the same thing (all layers' q/k/v products,
// say) share a label.
struct OpTime {
  std::string label;
  double seconds = 0;
  int64_t calls = 0;
  int64_t weightBytes = 0;  // weight bytes the label's products read per call, summed over calls
  double flops = 0;         // the products' multiply-adds x 2 (weights x rows), summed over calls
};

struct OpProfileTotals {
  int64_t steps = 0;
  int64_t tokens = 0;
  double stepSeconds = 0;  // whole steps, checks and copies between ops included
  std::vector<OpTime> ops;  // in the order a step first ran them
};

void setOpProfiling(bool on);
bool opProfiling();
// Returns the totals since the last call (or since profiling was turned on) and clears them.
OpProfileTotals takeOpProfile();

// A plan's side: labels fixed when the plan is built, one step's times added to them by index,
// merged into the process-wide totals at the step's end.
class OpProfiler {
 public:
  using Clock = std::chrono::steady_clock;
  // Returns the index of `label` (added on first use); one call's products read `weightBytes`
  // bytes of `weightElements` weights.
  int label(const std::string& label, int64_t weightBytes, int64_t weightElements);
  // One call of the label's op, over `rows` activation rows, started at `start`.
  void add(int index, Clock::time_point start, int64_t rows) {
    stepTimes_[index] += std::chrono::duration<double>(Clock::now() - start).count();
    stepCalls_[index]++;
    stepFlops_[index] += 2.0 * (double)elements_[index] * (double)rows;
  }
  void finishStep(int64_t tokens, Clock::time_point start);

 private:
  std::vector<std::string> labels_;
  std::vector<int64_t> bytes_;
  std::vector<int64_t> elements_;
  std::vector<double> stepTimes_;
  std::vector<double> stepFlops_;
  std::vector<int64_t> stepCalls_;
};

}  // namespace kiln
