// Errors of the CUDA backend: no usable device, not enough device memory, a graph the kernels do
// not run, a failure on the device. Each says what was expected, what was found and what to do.
import { KilnError } from '../../errors.js';

/** No CUDA device is usable: a build without CUDA, no driver, no device, or one too old. */
export class CudaUnavailableError extends KilnError {
  readonly code = 'cuda_unavailable';
}

/** The model, context and slots need more device memory than is free. */
export class CudaOutOfMemoryError extends KilnError {
  readonly code = 'cuda_out_of_memory';
}

/** The graph has an op, type or shape the CUDA kernels do not run; raised when it is planned. */
export class CudaGraphError extends KilnError {
  readonly code = 'cuda_graph_unsupported';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
}

/** A CUDA call failed on the device. */
export class CudaRuntimeError extends KilnError {
  readonly code = 'cuda_error';
}

/** The typed error for an error thrown by the native CUDA plan (which tags it with `kilnCode`). */
export function cudaErrorFrom(err: unknown): KilnError {
  if (err instanceof KilnError) return err;
  const message = err instanceof Error ? err.message : String(err);
  switch ((err as { kilnCode?: string } | null)?.kilnCode) {
    case 'invalid_graph': return new CudaGraphError(`The CUDA backend cannot run this model: ${message}. Use backend: 'cpu'.`, { cause: err });
    case 'cuda_out_of_memory': return new CudaOutOfMemoryError(message, { cause: err });
    case 'cuda_unavailable': return new CudaUnavailableError(`${message}. Use backend: 'cpu'.`, { cause: err });
    default: return new CudaRuntimeError(`CUDA error: ${message}`, { cause: err });
  }
}
