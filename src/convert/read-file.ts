// Reads the files of a model directory with a size bound, turning every failure into a typed
// error that names the file.
import { readFileSync, statSync, type Stats } from 'node:fs';
import { HfModelFileMissingError, HfModelFormatError } from './errors.js';

/** The stat of `path`, or null when it does not exist; throws unless it is a regular file. */
export function statFile(path: string): Stats | null {
  let stat;
  try {
    stat = statSync(path, { throwIfNoEntry: false });
  } catch (err) {
    throw new HfModelFileMissingError(path, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (stat && !stat.isFile()) throw new HfModelFileMissingError(path, 'is not a regular file');
  return stat ?? null;
}

/** The bytes of `path`, or null when it does not exist. */
export function readOptionalBytes(path: string, maxBytes: number): Uint8Array | null {
  const stat = statFile(path);
  if (stat === null) return null;
  if (stat.size > maxBytes) throw new HfModelFormatError(path, `the file has ${stat.size} bytes, more than the ${maxBytes} a real one needs`);
  return readFileSync(path);
}

/** The text of `path`, or null when it does not exist. */
export function readOptionalText(path: string, maxBytes: number): string | null {
  const bytes = readOptionalBytes(path, maxBytes);
  if (bytes === null) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (err) {
    throw new HfModelFormatError(path, `cannot be read as UTF-8 text (${(err as Error).message})`);
  }
}

/** The parsed JSON of `path`, or null when it does not exist. */
export function readOptionalJson(path: string, maxBytes: number): unknown {
  const text = readOptionalText(path, maxBytes);
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new HfModelFormatError(path, `is not valid JSON (${(err as Error).message})`);
  }
}

/** The parsed JSON object of `path`, or null when it does not exist. */
export function readOptionalJsonObject(path: string, maxBytes: number): Record<string, unknown> | null {
  const value = readOptionalJson(path, maxBytes);
  if (value === null) return null;
  if (!isRecord(value)) throw new HfModelFormatError(path, 'should hold a JSON object');
  return value;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
