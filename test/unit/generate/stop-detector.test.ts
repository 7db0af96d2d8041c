import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../../src/errors.js';
import { MAX_STOP_LENGTH, MAX_STOP_STRINGS, StopDetector } from '../../../src/generate/stop-detector.js';
import { prng } from '../../helpers/prng.js';

/** Feeds the chunks and returns every emitted piece, the finish() text last. */
function run(stops: string[], chunks: string[]): { pieces: string[]; text: string; stopped: boolean } {
  const d = new StopDetector(stops);
  const pieces: string[] = [];
  let stopped = false;
  for (const chunk of chunks) {
    const r = d.push(chunk);
    pieces.push(r.text);
    stopped ||= r.stopped;
  }
  pieces.push(d.finish());
  return { pieces, text: pieces.join(''), stopped };
}

/**
 * The obvious definition: scan the whole text for the first position where a stop string ends
 * (the longest one if several end there) and cut before it.
 */
function expected(stops: string[], text: string): { text: string; stopped: boolean } {
  for (let end = 1; end <= text.length; end++) {
    const hits = stops.filter((s) => text.slice(0, end).endsWith(s));
    if (hits.length > 0) {
      const longest = Math.max(...hits.map((s) => s.length));
      return { text: text.slice(0, end - longest), stopped: true };
    }
  }
  return { text, stopped: false };
}

/** How much of `seen` may be emitted: all but the longest tail that begins a stop string. */
function emittable(stops: string[], seen: string): string {
  for (let from = 0; from < seen.length; from++) {
    const tail = seen.slice(from);
    if (stops.some((s) => s.length > tail.length && s.startsWith(tail))) return seen.slice(0, from);
  }
  const last = seen.charCodeAt(seen.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? seen.slice(0, -1) : seen;
}

describe('StopDetector', () => {
  it('passes text straight through when no stop string can start', () => {
    const d = new StopDetector(['\n\n']);
    expect(d.push('Hello')).toEqual({ text: 'Hello', stopped: false });
    expect(d.push(' world')).toEqual({ text: ' world', stopped: false });
    expect(d.finish()).toBe('');
  });

  it('passes everything through with no stop strings', () => {
    expect(run([], ['a', 'b\n', '\n'])).toEqual({ pieces: ['a', 'b\n', '\n', ''], text: 'ab\n\n', stopped: false });
  });

  it('holds back a possible start and releases it when it cannot match', () => {
    const d = new StopDetector(['\n\n']);
    expect(d.push('Hello\n')).toEqual({ text: 'Hello', stopped: false });
    expect(d.push('World')).toEqual({ text: '\nWorld', stopped: false });
  });

  it('stops across chunks, drops the stop string and what follows', () => {
    const d = new StopDetector(['</s>']);
    expect(d.push('The end<')).toEqual({ text: 'The end', stopped: false });
    expect(d.push('/s')).toEqual({ text: '', stopped: false });
    expect(d.push('>tail')).toEqual({ text: '', stopped: true });
    expect(d.push('more')).toEqual({ text: '', stopped: true });
    expect(d.finish()).toBe('');
  });

  it('stops inside one chunk', () => {
    expect(new StopDetector(['STOP']).push('abcSTOPdef')).toEqual({ text: 'abc', stopped: true });
  });

  it('releases the held tail on finish', () => {
    const d = new StopDetector(['###']);
    expect(d.push('x##')).toEqual({ text: 'x', stopped: false });
    expect(d.finish()).toBe('##');
    expect(d.finish()).toBe('');
  });

  it('holds the longest possible start when prefixes overlap', () => {
    const d = new StopDetector(['aab']);
    expect(d.push('aa')).toEqual({ text: '', stopped: false });
    expect(d.push('a')).toEqual({ text: 'a', stopped: false });
    expect(d.push('b')).toEqual({ text: '', stopped: true });
  });

  it('stops at the stop string that ends first, the longer one when they end together', () => {
    expect(run(['abcd', 'bc'], ['abcd']).text).toBe('a');
    expect(run(['abcd', 'bc'], ['a', 'b', 'c', 'd']).text).toBe('a');
    expect(run(['bc', 'abc'], ['xabc']).text).toBe('x');
    expect(run(['bc', 'abc'], ['xa', 'bc']).text).toBe('x');
    const d = new StopDetector(['bc', 'abc', 'zz']);
    expect(d.matched).toBeNull();
    d.push('xa');
    d.push('bc');
    expect(d.matched).toBe('abc');
  });

  describe('surrogate pairs', () => {
    it('never emits half of a pair split across pushes', () => {
      const d = new StopDetector([]);
      expect(d.push('a\uD83D')).toEqual({ text: 'a', stopped: false });
      expect(d.push('\uDE00b')).toEqual({ text: '\uD83D\uDE00b', stopped: false });
    });

    it('matches stop strings that contain astral characters', () => {
      const d = new StopDetector(['😀!']);
      expect(d.push('hi\uD83D')).toEqual({ text: 'hi', stopped: false });
      expect(d.push('\uDE00')).toEqual({ text: '', stopped: false });
      expect(d.push('?')).toEqual({ text: '😀?', stopped: false });
      expect(d.push('😀')).toEqual({ text: '', stopped: false });
      expect(d.push('!')).toEqual({ text: '', stopped: true });
    });

    it('does not match a pair\'s high half against a different pair', () => {
      // 😀 is D83D DE00, 😁 is D83D DE01: same high surrogate.
      expect(run(['😁'], ['x😀', 'y'])).toEqual({ pieces: ['x😀', 'y', ''], text: 'x😀y', stopped: false });
    });

    it('gives a lone trailing high surrogate back at finish', () => {
      const d = new StopDetector([]);
      expect(d.push('z\uD800').text).toBe('z');
      expect(d.finish()).toBe('\uD800');
    });
  });

  it('rejects bad stop lists with InvalidArgumentError naming stop', () => {
    const bad: string[][] = [
      [''],
      ['ok', 'x'.repeat(MAX_STOP_LENGTH + 1)],
      Array.from({ length: MAX_STOP_STRINGS + 1 }, (_, i) => `s${i}`),
      ['\uD83D'],
      ['a\uDE00'],
    ];
    for (const stops of bad) {
      try {
        new StopDetector(stops);
        expect.unreachable(JSON.stringify(stops));
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidArgumentError);
        expect((e as InvalidArgumentError).param).toBe('stop');
      }
    }
    expect(() => new StopDetector(['😀', 'x'.repeat(MAX_STOP_LENGTH)])).not.toThrow();
  });

  it('gives the same result for every chunking and holds back no more than it must', () => {
    const rng = prng(2024);
    const alphabet = ['a', 'b', 'c', '\n', '😀', '😁', 'é'];
    const stopSets = [['\n\n'], ['abc', 'bca'], ['aab', 'b😀'], ['😀😁', 'c'], ['cab', 'ab', 'a\n\n'], []];
    for (let iter = 0; iter < 400; iter++) {
      const stops = stopSets[iter % stopSets.length];
      const text = Array.from({ length: 1 + rng.int(30) }, () => rng.pick(alphabet)).join('');
      // Cut at arbitrary UTF-16 positions, including inside surrogate pairs.
      const chunks: string[] = [];
      for (let at = 0; at < text.length; ) {
        const size = 1 + rng.int(4);
        chunks.push(text.slice(at, at + size));
        at += size;
      }
      const d = new StopDetector(stops);
      let emitted = '';
      let seen = '';
      let stopped = false;
      for (const chunk of chunks) {
        const r = d.push(chunk);
        if (r.text.length > 0) {
          const first = r.text.charCodeAt(0);
          const last = r.text.charCodeAt(r.text.length - 1);
          expect(first >= 0xdc00 && first <= 0xdfff, 'piece starts with a low surrogate').toBe(false);
          expect(last >= 0xd800 && last <= 0xdbff, 'piece ends with a high surrogate').toBe(false);
        }
        emitted += r.text;
        seen += chunk;
        if (r.stopped) {
          stopped = true;
          break;
        }
        expect(emitted).toBe(emittable(stops, seen));
      }
      if (!stopped) emitted += d.finish();
      expect({ text: emitted, stopped }).toEqual(expected(stops, text));
    }
  });
});
