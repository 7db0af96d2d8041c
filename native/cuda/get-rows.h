// get_rows on the device: the rows of a weight table picked by token ids, dequantized to F32.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln::cuda {

// y (nTokens, cols) = rows tokens[0..nTokens) of `table` (rowBytes per row, in `type`), as F32.
// `tokens` is device memory and already checked against the table's row count.
void getRows(GgmlType type, const uint8_t* table, size_t rowBytes, int64_t cols, const int32_t* tokens,
             int64_t nTokens, float* y, cudaStream_t stream);

}  // namespace kiln::cuda
