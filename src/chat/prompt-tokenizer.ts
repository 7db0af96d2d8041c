// Tokenizes rendered chat prompts so that only the template's own text can produce control tokens.
// Before rendering, every control-token text inside a client string (`<|im_start|>` typed by a user)
// is broken with a sentinel character that occurs nowhere else; after rendering, the text is split
// at the control-token texts that remain (the template's), and the runs between them, sentinels
// removed, are tokenized as plain text. Without any such text this is exactly the tokenizer's own
// special-token parsing.
import type { Tokenizer } from '../tokenizer/tokenizer.js';

const PLAIN = { addSpecial: false, parseSpecial: false };

// Private-use code points: chat text essentially never holds them; one absent from the request is picked.
const SENTINEL_FIRST = 0xe000;
const SENTINEL_LAST = 0xf8ff;

export class PromptTokenizer {
  /** Control-token texts, longest first. */
  private readonly controlRe: RegExp | null;
  private readonly eogRe: RegExp | null;
  private readonly idOf = new Map<string, number>();

  constructor(readonly tokenizer: Tokenizer) {
    const control: string[] = [];
    const eog: string[] = [];
    for (let id = 0; id < tokenizer.vocabSize; id++) {
      if (!tokenizer.isControl(id)) continue;
      const text = tokenizer.tokenToPiece(id);
      if (text === '' || this.idOf.has(text)) continue;
      this.idOf.set(text, id);
      control.push(text);
      if (tokenizer.isEog(id)) eog.push(text);
    }
    this.controlRe = alternation(control);
    this.eogRe = alternation(eog);
  }

  /**
   * A sentinel for this request's strings, or null when none of them holds a control-token text
   * (the common case: nothing is escaped).
   */
  sentinelFor(strings: Iterable<string>): string | null {
    const all: string[] = [];
    let needed = false;
    for (const s of strings) {
      all.push(s);
      if (!needed && this.controlRe !== null && matches(this.controlRe, s)) needed = true;
    }
    if (!needed) return null;
    const used = new Set<number>();
    for (const s of all) {
      for (const ch of s) {
        const c = ch.codePointAt(0)!;
        if (c >= SENTINEL_FIRST && c <= SENTINEL_LAST) used.add(c);
      }
    }
    for (let c = SENTINEL_FIRST; c <= SENTINEL_LAST; c++) if (!used.has(c)) return String.fromCodePoint(c);
    // Every private-use character occurs in the request: fall back to a noncharacter, removed below.
    return '\uFDD0';
  }

  /** Breaks every control-token text in `s` with the sentinel. */
  escape(s: string, sentinel: string): string {
    if (this.controlRe === null) return s;
    this.controlRe.lastIndex = 0;
    return s.replace(this.controlRe, (m) => m.slice(0, 1) + sentinel + m.slice(1));
  }

  /** The text with the sentinel removed: what the client wrote. */
  unescape(s: string, sentinel: string | null): string {
    return sentinel === null ? s : s.replaceAll(sentinel, '');
  }

  /** Token ids of rendered template text (no BOS/EOS added). */
  encode(text: string, sentinel: string | null, out: number[] = []): number[] {
    for (const piece of this.pieces(text)) {
      if (typeof piece === 'number') out.push(piece);
      else for (const id of this.tokenizer.encode(this.unescape(piece, sentinel), PLAIN)) out.push(id);
    }
    return out;
  }

  /**
   * encode() in slices that let the event loop run between them; stops once there are more than
   * `maxTokens` ids (the ids are then a start of the encoding).
   */
  async encodeAsync(text: string, sentinel: string | null, maxTokens: number): Promise<number[]> {
    const out: number[] = [];
    for (const piece of this.pieces(text)) {
      if (out.length > maxTokens) break;
      if (typeof piece === 'number') out.push(piece);
      else for (const id of await this.tokenizer.encodeAsync(this.unescape(piece, sentinel), { ...PLAIN, maxTokens: maxTokens - out.length })) out.push(id);
    }
    return out;
  }

  /** The text split at the template's control-token texts: runs of plain text, and control ids. */
  private pieces(text: string): Array<string | number> {
    const re = this.controlRe;
    if (re === null) return text.length > 0 ? [text] : [];
    const out: Array<string | number> = [];
    let last = 0;
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      if (m.index > last) out.push(text.slice(last, m.index));
      out.push(this.idOf.get(m[0])!);
      last = m.index + m[0].length;
    }
    if (last < text.length) out.push(text.slice(last));
    return out;
  }

  /** Index of the first end-of-generation token text at or after `from`, or -1. */
  indexOfEog(text: string, from: number): number {
    if (this.eogRe === null) return -1;
    this.eogRe.lastIndex = from;
    const m = this.eogRe.exec(text);
    return m === null ? -1 : m.index;
  }
}

/** What generated tokens spell, control tokens by their text, every leading space kept. */
export function spellTokens(tokenizer: Tokenizer, tokens: readonly number[]): string {
  const decoder = tokenizer.createDecoder();
  let text = '';
  for (const t of tokens) text += decoder.push(t);
  return text + decoder.flush();
}

function matches(re: RegExp, s: string): boolean {
  re.lastIndex = 0;
  return re.test(s);
}

// Longer alternatives first, so the leftmost match is also the longest at its position.
function alternation(texts: string[]): RegExp | null {
  if (texts.length === 0) return null;
  const sorted = [...texts].sort((a, b) => b.length - a.length);
  return new RegExp(sorted.map((t) => t.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|'), 'gu');
}
