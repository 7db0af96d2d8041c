// Typed errors for GGUF files. A model file sits on the server, so a bad one is a server-side
// fault (status 500); each message says what was expected, what was found, and what to do.
import { KilnError } from '../errors.js';

const REDOWNLOAD = 'The file is corrupt or was not written by a GGUF writer; download or convert it again.';

/** Longest name from a file quoted whole in a message. */
const MAX_QUOTED_CHARS = 64;

/**
 * A key or tensor name from an untrusted file, quoted for a message: JSON escapes control
 * characters, so a hostile name cannot drive the terminal the message is printed on.
 */
export function quoteName(name: string): string {
  return JSON.stringify(name.length > MAX_QUOTED_CHARS ? `${name.slice(0, MAX_QUOTED_CHARS)}...` : name);
}

/** The base of every error about the contents of a GGUF file. */
export abstract class GgufError extends KilnError {}

/** The file ended before a section it declares. */
export class GgufTruncatedError extends GgufError {
  readonly code = 'gguf_truncated';
  constructor(
    readonly section: string,
    readonly offset: number,
    readonly needed: number,
    readonly available: number,
  ) {
    super(`GGUF file ends inside ${section}: at byte ${offset} it needs ${needed} more bytes but ${available} remain. The file is truncated (an interrupted download or copy?); download or convert it again.`);
  }
}

export class GgufBadMagicError extends GgufError {
  readonly code = 'gguf_bad_magic';
  constructor(readonly found: Uint8Array) {
    super(`Not a GGUF file: expected the magic bytes "GGUF" at offset 0, found ${describeMagic(found)}. Pass a .gguf model file (convert other formats with llama.cpp's convert_hf_to_gguf.py).`);
  }
}

export class GgufUnsupportedVersionError extends GgufError {
  readonly code = 'gguf_unsupported_version';
  constructor(readonly version: number) {
    super(`GGUF version ${version} is not supported: kiln reads versions 2 and 3. ${
      version === 1
        ? 'Version 1 files predate August 2023; convert the model again with a current llama.cpp.'
        : (version & 0xffffff) === 0 && (version >>> 24 === 2 || version >>> 24 === 3)
          ? 'The version field reads as big-endian; kiln reads little-endian GGUF files only.'
          : REDOWNLOAD
    }`);
  }
}

/** A count, length or size beyond a named bound in limits.ts. */
export class GgufLimitError extends GgufError {
  readonly code = 'gguf_limit_exceeded';
  constructor(
    readonly limit: string,
    readonly value: number | bigint,
    readonly max: number,
    readonly where: string,
  ) {
    super(`GGUF ${where}: ${value} exceeds ${limit} (${max}). No real model needs this much; the file is corrupt or hostile. ${REDOWNLOAD}`);
  }
}

export class GgufBadValueTypeError extends GgufError {
  readonly code = 'gguf_bad_value_type';
  constructor(readonly valueType: number, readonly where: string) {
    super(`GGUF ${where}: metadata value type ${valueType} is unknown (expected 0..12). ${REDOWNLOAD}`);
  }
}

/** A metadata value whose bytes are invalid for its type (a bool that is neither 0 nor 1). */
export class GgufBadValueError extends GgufError {
  readonly code = 'gguf_bad_value';
  constructor(readonly where: string, detail: string) {
    super(`GGUF ${where}: ${detail}. ${REDOWNLOAD}`);
  }
}

export class UnsupportedTensorTypeError extends GgufError {
  readonly code = 'unsupported_tensor_type';
  constructor(readonly tensor: string, readonly tensorType: number) {
    super(`Tensor ${quoteName(tensor)} has GGML type ${tensorType}, which kiln does not know. Use a model quantized to F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K (for example a Q4_K_M file).`);
  }
}

export class GgufTensorOutOfBoundsError extends GgufError {
  readonly code = 'gguf_tensor_out_of_bounds';
  constructor(readonly tensor: string, start: bigint, end: bigint, fileSize: number) {
    super(`Tensor ${quoteName(tensor)} claims bytes ${start}..${end} but the file has ${fileSize} bytes. The file is truncated or corrupt; download or convert it again.`);
  }
}

export class GgufTensorOverlapError extends GgufError {
  readonly code = 'gguf_tensor_overlap';
  constructor(readonly tensor: string, readonly other: string) {
    super(`Tensors ${quoteName(other)} and ${quoteName(tensor)} share bytes of the data section; each tensor must have its own range. ${REDOWNLOAD}`);
  }
}

export class GgufDimensionError extends GgufError {
  readonly code = 'gguf_bad_dimensions';
  constructor(readonly tensor: string, detail: string) {
    super(`Tensor ${quoteName(tensor)}: ${detail}. ${REDOWNLOAD}`);
  }
}

export class GgufDuplicateError extends GgufError {
  readonly code = 'gguf_duplicate';
  constructor(readonly kind: 'metadata key' | 'tensor name', readonly duplicate: string) {
    super(`GGUF ${kind} ${quoteName(duplicate)} appears twice; each must be unique. ${REDOWNLOAD}`);
  }
}

export class GgufAlignmentError extends GgufError {
  readonly code = 'gguf_bad_alignment';
  constructor(detail: string) {
    super(`GGUF alignment: ${detail}. ${REDOWNLOAD}`);
  }
}

/** A metadata key the model needs is missing or has another type. */
export class GgufMetadataError extends GgufError {
  readonly code = 'gguf_metadata';
  constructor(readonly key: string, readonly expected: string, readonly found: string) {
    super(`GGUF metadata key ${quoteName(key)}: expected ${expected}, found ${found}. The model file lacks what its architecture needs; convert it again with a current llama.cpp.`);
  }
}

export class ModelFileNotFoundError extends KilnError {
  readonly code = 'model_file_not_found';
  constructor(readonly path: string, reason: string) {
    super(`Model file ${path} ${reason}. Check the path (relative paths resolve from ${process.cwd()}).`);
  }
}

function describeMagic(bytes: Uint8Array): string {
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
  const text = Array.from(bytes, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
  return `${hex} ("${text}")`;
}
