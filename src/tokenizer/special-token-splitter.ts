// Splits text at the tokens that are matched as whole strings before any model runs: control and
// unknown tokens (only when special-token parsing is on) and user-defined added tokens (always).
// Matching is leftmost-longest, as Hugging Face's added-vocabulary matcher does.
import { TokenType } from './token-type.js';

/** Text fragments to run through the model's algorithm, and ids matched verbatim. */
export type Fragment = string | number;

export class SpecialTokenSplitter {
  private readonly all: RegExp | null;
  private readonly userDefined: RegExp | null;
  private readonly idOf = new Map<string, number>();

  constructor(tokens: readonly string[], types: Uint8Array) {
    const all: string[] = [];
    const userDefined: string[] = [];
    for (let id = 0; id < tokens.length; id++) {
      const type = types[id];
      const text = tokens[id]!;
      if (text === '') continue;
      if (type !== TokenType.CONTROL && type !== TokenType.USER_DEFINED && type !== TokenType.UNKNOWN) continue;
      if (this.idOf.has(text)) continue; // a duplicate piece: the lowest id wins, as in a map built in order
      this.idOf.set(text, id);
      all.push(text);
      if (type === TokenType.USER_DEFINED) userDefined.push(text);
    }
    this.all = alternation(all);
    this.userDefined = alternation(userDefined);
  }

  split(text: string, parseSpecial: boolean): Fragment[] {
    const re = parseSpecial ? this.all : this.userDefined;
    if (re === null || text === '') return text === '' ? [] : [text];
    const out: Fragment[] = [];
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
}

// Longer alternatives first, so the regex's leftmost match is also the longest at that position.
function alternation(texts: string[]): RegExp | null {
  if (texts.length === 0) return null;
  const sorted = [...texts].sort((a, b) => b.length - a.length);
  return new RegExp(sorted.map((t) => t.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|'), 'gu');
}
