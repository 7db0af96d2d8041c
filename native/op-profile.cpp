// The process-wide op totals behind setOpProfiling / takeOpProfile, and each plan's per-step side.
#include "op-profile.h"

namespace kiln {

namespace {

std::atomic<bool> profiling{false};
std::mutex totalsMutex;
OpProfileTotals totals;

}  // namespace

void setOpProfiling(bool on) {
  std::lock_guard<std::mutex> lock(totalsMutex);
  profiling.store(on, std::memory_order_relaxed);
  totals = OpProfileTotals{};
}

bool opProfiling() { return profiling.load(std::memory_order_relaxed); }

OpProfileTotals takeOpProfile() {
  std::lock_guard<std::mutex> lock(totalsMutex);
  OpProfileTotals out = std::move(totals);
  totals = OpProfileTotals{};
  return out;
}

int OpProfiler::label(const std::string& label, int64_t weightBytes, int64_t weightElements) {
  for (size_t i = 0; i < labels_.size(); i++)
    if (labels_[i] == label) return (int)i;
  labels_.push_back(label);
  bytes_.push_back(weightBytes);
  elements_.push_back(weightElements);
  stepTimes_.push_back(0);
  stepFlops_.push_back(0);
  stepCalls_.push_back(0);
  return (int)labels_.size() - 1;
}

void OpProfiler::finishStep(int64_t tokens, Clock::time_point start) {
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::lock_guard<std::mutex> lock(totalsMutex);
  totals.steps++;
  totals.tokens += tokens;
  totals.stepSeconds += seconds;
  for (size_t i = 0; i < labels_.size(); i++) {
    if (stepCalls_[i] == 0) continue;
    OpTime* t = nullptr;
    for (OpTime& o : totals.ops)
      if (o.label == labels_[i]) t = &o;
    if (!t) {
      totals.ops.push_back(OpTime{labels_[i]});
      t = &totals.ops.back();
    }
    t->seconds += stepTimes_[i];
    t->calls += stepCalls_[i];
    t->weightBytes += bytes_[i] * stepCalls_[i];
    t->flops += stepFlops_[i];
    stepTimes_[i] = 0;
    stepFlops_[i] = 0;
    stepCalls_[i] = 0;
  }
}

}  // namespace kiln
