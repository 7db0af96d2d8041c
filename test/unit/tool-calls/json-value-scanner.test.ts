import { describe, expect, it } from 'vitest';
import { prng } from '../../helpers/prng.js';
import { isJsonValue, JsonValueScanner } from '../../../src/tool-calls/json-value-scanner.js';

/** Where the scanner says one value ends in `text`, fed in pieces of `size`; -1 if not JSON. */
function valueEnd(text: string, size: number): number {
  const s = new JsonValueScanner();
  for (let i = 0; i < text.length; i += size) {
    const n = Math.min(text.length, i + size);
    const j = s.feed(text, i, n);
    if (s.failed) return -1;
    if (s.done) return j;
  }
  s.end();
  return s.done ? text.length : -1;
}

describe('JsonValueScanner', () => {
  const valid = [
    '{}',
    '[]',
    '{"a": [1, -2.5e+3, 0, 0.1E-2, true, false, null, "x\\u00e9\\n\\"\\\\\\/"]}',
    '"</tool_call>"',
    '  {"nested": {"deep": [[[{}]]]}}  ',
    '12345678901234567890123',
    '-0',
  ];
  const invalid = ['{', '{"a" 1}', '{"a": 1,}', '[1,]', '01', '1.', '-', '"\\x"', '"\u0001"', 'tru', '{"a": nul}', '"\\u12G4"', '[1 2]', '{,}', '+1'];

  it('agrees with JSON.parse on hand-made cases, in any piece size', () => {
    for (const t of [...valid, ...invalid]) {
      let ok = true;
      try {
        JSON.parse(t);
      } catch {
        ok = false;
      }
      expect(isJsonValue(t), t).toBe(ok);
      for (const size of [1, 2, 3, 7, 1000]) {
        const end = valueEnd(t.trim(), size);
        expect(end === t.trim().length, `${t} @${size}`).toBe(ok);
      }
    }
  });

  it('agrees with JSON.parse on random strings of JSON characters', () => {
    const rng = prng(99);
    const alphabet = ['{', '}', '[', ']', '"', ':', ',', ' ', '1', '0', '-', '.', 'e', 'true', 'null', '\\', 'u', 'a', '\n'];
    for (let k = 0; k < 20000; k++) {
      let t = '';
      const n = 1 + rng.int(12);
      for (let i = 0; i < n; i++) t += rng.pick(alphabet);
      let ok = true;
      try {
        JSON.parse(t);
      } catch {
        ok = false;
      }
      expect(isJsonValue(t), JSON.stringify(t)).toBe(ok);
    }
  });

  it('stops right after a container or string, and on the character that ends a number', () => {
    expect(valueEnd('{"a": 1}</tool_call>', 4)).toBe(8);
    expect(valueEnd('"x"rest', 1)).toBe(3);
    const s = new JsonValueScanner();
    expect(s.feed('12,', 0, 3)).toBe(2);
    expect(s.done).toBe(true);
  });

  it('reports the offending character', () => {
    const s = new JsonValueScanner();
    expect(s.feed('{"a": x}', 0, 8)).toBe(6);
    expect(s.failed).toBe(true);
  });

  it('nests a million deep without recursion', () => {
    const t = `${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`;
    expect(isJsonValue(t)).toBe(true);
    expect(isJsonValue(t.slice(1))).toBe(false);
  });
});
