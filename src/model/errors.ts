// Errors for model files that parse as GGUF but cannot be run.
import { KilnError } from '../errors.js';

export class UnsupportedArchitectureError extends KilnError {
  readonly code = 'unsupported_architecture';
  constructor(readonly architecture: string, supported: readonly string[]) {
    super(`Model architecture '${architecture}' is not supported; kiln runs ${supported.join(', ')}. Use a GGUF of a supported family.`);
  }
}

export class MissingTensorError extends KilnError {
  readonly code = 'missing_tensor';
  constructor(readonly tensor: string, architecture: string) {
    super(`The model has no tensor '${tensor}', which a '${architecture}' model needs. The file is incomplete or was converted for another architecture.`);
  }
}

export class TensorShapeError extends KilnError {
  readonly code = 'tensor_shape_mismatch';
  constructor(readonly tensor: string, expected: readonly number[], found: readonly number[]) {
    super(`Tensor '${tensor}' has shape [${found.join(', ')}], expected [${expected.join(', ')}] from the model's hyperparameters.`);
  }
}

export class UnsupportedWeightTypeError extends KilnError {
  readonly code = 'unsupported_weight_type';
  constructor(readonly tensor: string, typeName: string) {
    super(`Tensor '${tensor}' is stored as ${typeName}, which kiln cannot run. Supported weight types: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K. Re-quantize the model to one of them.`);
  }
}

export class InvalidHyperparameterError extends KilnError {
  readonly code = 'invalid_hyperparameter';
  constructor(readonly key: string, message: string) {
    super(`Model metadata '${key}': ${message}`);
  }
}
