import { describe, expect, it } from 'vitest';
import { prng } from '../../helpers/prng.js';
import { JsonValueStream } from '../../../src/tool-calls/json-value-stream.js';
import { isTrimmedSpace } from '../../../src/tool-calls/typed-json-value.js';

const OBJ = 123;
const ARR = 91;

interface Streamed {
  /** Concatenation of what push() let out. */
  sent: string;
  /** sent + end(), or null when the stream said the value is not JSON. */
  whole: string | null;
  committed: boolean;
}

function stream(pieces: readonly string[], open: number): Streamed {
  const s = new JsonValueStream();
  s.reset(open);
  let sent = '';
  for (const p of pieces) {
    const out = s.push(p);
    if (out === null) return { sent, whole: null, committed: s.committed };
    sent += out;
  }
  const rest = s.end();
  return { sent, whole: rest === null ? null : sent + rest, committed: s.committed };
}

/** The final parse's rule with JSON.parse as the judge: the trimmed text when it is one JSON value of the kind. */
function reference(text: string, open: number): string | null {
  const t = text.trim();
  if (t.charCodeAt(0) !== open) return null;
  try {
    JSON.parse(t);
    return t;
  } catch {
    return null;
  }
}

function pieceSizes(text: string): string[][] {
  const out: string[][] = [[text], Array.from(text)];
  for (const size of [2, 3, 5]) {
    const p: string[] = [];
    for (let i = 0; i < text.length; i += size) p.push(text.slice(i, i + size));
    out.push(p);
  }
  for (let cut = 1; cut < text.length; cut++) out.push([text.slice(0, cut), text.slice(cut)]);
  return out;
}

describe('JsonValueStream', () => {
  const texts: [string, number][] = [
    ['{"a": [1, -2.5e+3, true, null, "x\\"}"]}', OBJ],
    ['\n  {"nested": {"deep": [[[{}]]]}}\t \n', OBJ],
    ['\u00a0{"a": "é😀"}\u3000\ufeff', OBJ],
    ['[1, 2]', ARR],
    ['[]', ARR],
    [' { } ', OBJ],
    ['[\n  "x",\n  2\n]', ARR],
    ["{'a': 1}", OBJ],
    ['[True]', ARR],
    ['{"a": True}', OBJ],
    ['[1, 2]x', ARR],
    ['{}x', OBJ],
    ['{"a": 1', OBJ],
    ['{"a": "b\nc"}', OBJ],
    ['{"a":\u00a01}', OBJ],
    ['[1]', OBJ],
    ['{"a": 1}', ARR],
    ['null', OBJ],
    ['', ARR],
    ['  ', ARR],
    ['[1] [2]', ARR],
  ];

  it('gives exactly the final typing (JSON.parse as the judge) in any cut', () => {
    for (const [text, open] of texts) {
      const want = reference(text, open);
      for (const pieces of pieceSizes(text)) {
        const got = stream(pieces, open);
        expect(got.whole, JSON.stringify(pieces)).toBe(want);
        // Whatever went out is the start of the final text; for a value that is not JSON, only
        // what a committed stream sent, and that is where the caller diverges.
        if (want !== null) expect(want.startsWith(got.sent)).toBe(true);
        else if (!got.committed) expect(got.sent).toBe('');
      }
    }
  });

  it('commits once the character after the bracket is JSON, whatever the cut', () => {
    const cases: [string, number, boolean][] = [
      ["{'a': 1}", OBJ, false],
      ['[True]', ARR, false],
      ['[None, 1]', ARR, false],
      ['{}x', OBJ, false],
      ['{"a": True}', OBJ, true],
      ['[1, 2]x', ARR, true],
      ['[1, 2]', ARR, true],
    ];
    for (const [text, open, committed] of cases) {
      for (const pieces of pieceSizes(text)) expect(stream(pieces, open).committed, `${text} ${JSON.stringify(pieces)}`).toBe(committed);
    }
  });

  it('sends text as it is accepted, holding the brackets and the spaces around the value', () => {
    const s = new JsonValueStream();
    s.reset(ARR);
    const outs = Array.from(' [ 1, "a b" ] \n').map((c) => s.push(c));
    expect(outs).toEqual(['', '', '', '[ 1', ',', ' ', '"', 'a', ' ', 'b', '"', ' ', '', '', '']);
    expect(s.end()).toBe(']');
  });

  it('agrees with the final typing on random text, in random pieces', () => {
    const rng = prng(0x15_0b_1e);
    const ws = (): string => rng.pick(['', '', ' ', '\n  ', '\t']);
    const scalar = (): string => rng.pick(['1', '-2.5e3', '0', 'true', 'false', 'null', '"a"', '"b \\" c"', '"}]"', '"é😀"']);
    const json = (depth: number): string => {
      const r = rng.next();
      if (depth > 2 || r < 0.4) return scalar();
      const items = Array.from({ length: rng.int(4) }, () => json(depth + 1));
      if (r < 0.7) return `[${ws()}${items.join(`${ws()},${ws()}`)}${ws()}]`;
      return `{${ws()}${items.map((v, i) => `"k${i}"${ws()}:${ws()}${v}`).join(`,${ws()}`)}${ws()}}`;
    };
    // Python-isms, stray text and spaces JSON does not allow.
    const damage = ['True', 'None', "'x'", 'x', ',', ']', '}', '\u00a0', '\n', '"', '(1,)'];
    let valid = 0;
    for (let k = 0; k < 20_000; k++) {
      const open = rng.next() < 0.5 ? OBJ : ARR;
      let text = json(1);
      if (rng.next() < 0.7) text = open === OBJ ? `{"v": ${text}}` : `[${text}]`;
      if (rng.next() < 0.4) {
        const at = rng.int(text.length + 1);
        text = rng.next() < 0.7 ? text.slice(0, at) + rng.pick(damage) + text.slice(at) : text.slice(0, at);
      }
      if (rng.next() < 0.3) text = `${rng.pick([' ', '\n', '\u3000'])}${text}${rng.pick(['', ' ', '\n', 'x'])}`;
      const pieces: string[] = [];
      for (let i = 0; i < text.length; ) {
        const size = 1 + rng.int(4);
        pieces.push(text.slice(i, i + size));
        i += size;
      }
      const want = reference(text, open);
      const got = stream(pieces, open);
      expect(got.whole, JSON.stringify(text)).toBe(want);
      if (want !== null) {
        valid++;
        expect(want.startsWith(got.sent)).toBe(true);
      }
    }
    // Both outcomes are well represented.
    expect(valid).toBeGreaterThan(4000);
    expect(valid).toBeLessThan(16_000);
  });
});

describe('isTrimmedSpace', () => {
  it('is exactly what String.prototype.trim removes', () => {
    const wrong: string[] = [];
    for (let c = 0; c <= 0xffff; c++) if (isTrimmedSpace(c) !== (String.fromCharCode(c).trim() === '')) wrong.push(c.toString(16));
    expect(wrong).toEqual([]);
  });
});
