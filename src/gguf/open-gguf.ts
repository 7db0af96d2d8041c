// Opens a GGUF model file: maps it read-only through the native addon (weights are never copied
// into the JS heap) and parses its header from the mapping.
import { statSync } from 'node:fs';
import { native } from '../native/binding.js';
import { GgufError, ModelFileNotFoundError } from './errors.js';
import { parseGguf } from './reader.js';
import type { GgufFile } from './types.js';

/** Throws ModelFileNotFoundError unless `path` is a regular file that can be stat'ed. */
export function assertModelFile(path: string): void {
  let stat;
  try {
    stat = statSync(path, { throwIfNoEntry: false });
  } catch (err) {
    throw new ModelFileNotFoundError(path, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!stat) throw new ModelFileNotFoundError(path, 'does not exist');
  if (!stat.isFile()) throw new ModelFileNotFoundError(path, 'is not a regular file');
}

export function openGguf(path: string): { file: GgufFile; buffer: ArrayBuffer } {
  // Checked before any native code, so a wrong path gets a typed error even without the addon.
  assertModelFile(path);
  const addon = native();
  let buffer: ArrayBuffer;
  try {
    buffer = addon.mapFile(path);
  } catch (err) {
    // open/mmap failures (permissions, a file removed since the stat) are about the path too.
    throw new ModelFileNotFoundError(path, `cannot be mapped (${(err as Error).message})`);
  }
  try {
    return { file: parseGguf(new Uint8Array(buffer)), buffer };
  } catch (err) {
    // The reader only sees bytes; the path is what the user needs to find the bad file.
    if (err instanceof GgufError) err.message = `${path}: ${err.message}`;
    throw err;
  }
}
