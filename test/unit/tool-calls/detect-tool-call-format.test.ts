// On the real chat templates in ../shared/templates (provenance in SOURCES.md there).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectToolCallFormat } from '../../../src/tool-calls/index.js';
import { SHARED } from '../../helpers/paths.js';

describe('detectToolCallFormat', () => {
  const expected: [string, string | null][] = [
    ['qwen3-coder.jinja', 'qwen3_coder'],
    ['qwen3.jinja', 'hermes'],
    ['qwen2.5.jinja', 'hermes'],
    ['hermes.jinja', 'hermes'],
    ['mistral-nemo.jinja', 'mistral'],
    ['mistral-small-3.jinja', 'mistral'],
    ['llama3.1.jinja', 'llama3_json'],
    ['llama3.2.jinja', 'llama3_json'],
    ['llama2-chat.jinja', null],
    ['tinyllama.jinja', null],
  ];
  for (const [file, format] of expected) {
    it(`${file} -> ${format}`, () => {
      expect(detectToolCallFormat(readFileSync(join(SHARED, 'templates', file), 'utf8'))).toBe(format);
    });
  }

  it('is null for anything else', () => {
    expect(detectToolCallFormat('')).toBeNull();
    expect(detectToolCallFormat(42 as never)).toBeNull();
  });
});
