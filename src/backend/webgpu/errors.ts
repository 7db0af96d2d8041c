// Errors of the WebGPU backend: no usable adapter, a limit the adapter cannot meet, a graph the
// backend cannot run. Each says what was expected, what was found and what to do.
import { KilnError } from '../../errors.js';

export class WebGpuUnavailableError extends KilnError {
  readonly code = 'webgpu_unavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The model or options need more of a device limit than the adapter offers. */
export class WebGpuLimitError extends KilnError {
  readonly code = 'webgpu_limit_exceeded';
  constructor(readonly limit: string, readonly needed: number, readonly available: number, what: string, advice: string) {
    super(`${what} needs the WebGPU limit ${limit} to be at least ${needed}, but this adapter allows ${available}. ${advice}`);
  }
}

/** The graph has an op, type or shape the WebGPU backend does not run; raised when it is planned. */
export class WebGpuGraphError extends KilnError {
  readonly code = 'webgpu_graph_unsupported';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
}
