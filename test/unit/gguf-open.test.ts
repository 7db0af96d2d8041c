// openGguf: a typed error for a wrong path before native code runs; the mapped file where the
// addon is built.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelFileNotFoundError } from '../../src/gguf/errors.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { native } from '../../src/native/binding.js';
import { MODELS } from '../helpers/paths.js';

/** Whether the built addon has mapFile (an addon built before it landed does not). */
function canMap(): boolean {
  try {
    return typeof native().mapFile === 'function';
  } catch {
    return false;
  }
}

describe('openGguf', () => {
  it('throws ModelFileNotFoundError for a missing file or a directory', () => {
    expect(() => openGguf(join(tmpdir(), 'kiln-no-such-model.gguf'))).toThrow(ModelFileNotFoundError);
    expect(() => openGguf(mkdtempSync(join(tmpdir(), 'kiln-dir-')))).toThrow(/is not a regular file/);
  });

  it.skipIf(!canMap() || !existsSync(MODELS))('maps and parses a model (needs the native addon with mapFile)', () => {
    const { file, buffer } = openGguf(join(MODELS, 'stories260K.gguf'));
    expect(buffer.byteLength).toBe(file.fileSize);
    expect(file.tensors).toHaveLength(48);
    const embd = new Float32Array(buffer, file.dataOffset + file.tensors[0]!.offset, 4);
    expect(embd.every(Number.isFinite)).toBe(true);
  });
});
