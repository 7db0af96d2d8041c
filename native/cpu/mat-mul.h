// Matrix products against weights in any supported type.
#pragma once
#include <cstddef>
#include <cstdint>

#include "thread-pool.h"
#include "type-traits.h"

namespace kiln {

// Scratch bytes mulMat needs for nTokens activation rows of width cols.
size_t mulMatScratchBytes(GgmlType weightType, int64_t cols, int64_t nTokens);

// y (nTokens, rows) = x (nTokens, cols) * W^T, with W (rows, cols) in its GGML block layout.
// Activations are first converted to the weight type's vecDotType into `scratch`
// (mulMatScratchBytes bytes), then output rows are split across the pool's threads.
// Called from the pool's owner thread; uses every thread of the pool.
void mulMat(const TypeTraits& w, const void* weights, int64_t rows, int64_t cols, const float* x,
            int64_t nTokens, float* y, ThreadPool& pool, void* scratch);

}  // namespace kiln
