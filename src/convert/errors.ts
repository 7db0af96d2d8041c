// Typed errors of `kiln convert`: each names the file at fault, what was expected and found, and
// what to do. The input directory is the user's own, so these are caller faults (status 400).
import { KilnError } from '../errors.js';
import { quoteName } from '../gguf/errors.js';

abstract class ConvertError extends KilnError {
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
}

/** A file the conversion needs is absent or unreadable. */
export class HfModelFileMissingError extends ConvertError {
  readonly code = 'hf_model_file_missing';
  constructor(readonly path: string, detail: string) {
    super(`${path}: ${detail}. A Hugging Face model directory needs config.json, the *.safetensors weights, and tokenizer.json or tokenizer.model.`);
  }
}

/** config.json names a model family kiln cannot convert. */
export class HfUnsupportedArchitectureError extends ConvertError {
  readonly code = 'unsupported_architecture';
  constructor(readonly architecture: string, supported: readonly string[]) {
    super(`config.json names the architecture ${quoteName(architecture)}, which kiln convert does not support; it converts ${supported.join(', ')}.`);
  }
}

/** A .safetensors file whose header or layout is invalid. */
export class SafetensorsFormatError extends ConvertError {
  readonly code = 'invalid_safetensors';
  constructor(readonly path: string, detail: string) {
    super(`${path}: not a valid safetensors file: ${detail}. The download is corrupt or incomplete; download the model again.`);
  }
}

/** A JSON file, hyperparameter, tensor or tokenizer of the model that cannot be converted as it is. */
export class HfModelFormatError extends ConvertError {
  readonly code = 'invalid_hf_model';
  constructor(readonly path: string, detail: string) {
    super(`${path}: ${detail}`);
  }
}

/** The output file cannot be created or written (a missing folder, no permission, a full disk). */
export class ConvertOutputError extends ConvertError {
  readonly code = 'convert_output_failed';
  constructor(readonly path: string, cause: unknown) {
    super(`cannot write ${path}: ${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message}. Check that its folder exists and has room for the model.`, { cause });
  }
}
