// Test helper: feed a text to a matcher token by token (as the model's tokenizer splits it),
// checking at every step that the mask allows the token accept() takes.
import type { GrammarMatcher } from '../../../src/grammar/matcher.js';
import type { Tokenizer } from '../../../src/tokenizer/tokenizer.js';

export type MatchOutcome = 'accepted' | 'refused' | 'incomplete';

export function allows(mask: Uint32Array, id: number): boolean {
  return ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;
}

/** Runs `text` through a fresh state of `m`; with `masks`, every token must also be in allowed(). */
export function matchText(m: GrammarMatcher, tok: Tokenizer, text: string, masks = true): MatchOutcome {
  m.reset();
  const ids = tok.encode(text, { addSpecial: false });
  // A tokenizer that normalizes (Qwen's NFC) cannot spell some texts in tokens: feed their bytes.
  if (tok.decode(ids) !== text) return m.acceptBytes(new TextEncoder().encode(text)) ? (m.canEnd() ? 'accepted' : 'incomplete') : 'refused';
  for (const id of ids) {
    const allowed = masks ? allows(m.allowed(), id) : null;
    const took = m.accept(id);
    if (allowed !== null && allowed !== took) throw new Error(`mask and accept() disagree on token ${id} (${JSON.stringify(tok.tokenToPiece(id))}) in ${JSON.stringify(text)}`);
    if (!took) return 'refused';
  }
  if (masks) {
    const eog = tok.eosId!;
    if (allows(m.allowed(), eog) !== m.canEnd()) throw new Error(`mask and canEnd() disagree at the end of ${JSON.stringify(text)}`);
  }
  return m.canEnd() ? 'accepted' : 'incomplete';
}
