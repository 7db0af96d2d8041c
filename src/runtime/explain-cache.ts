// Why a prompt does or does not hit the KV cache: the slot a request would take (the longest common
// token prefix), how many prompt tokens it holds, and the first token where the prompt and the
// slot's cache differ, with the message that token belongs to.
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { BuiltPrompt } from '../chat/build-prompt.js';
import { spellTokens } from '../chat/prompt-tokenizer.js';
import { commonPrefixLength } from './slot-pool.js';

export interface CacheDivergence {
  /** The first prompt token that is not in the slot's cache. */
  tokenIndex: number;
  /** The message that token belongs to; null when it is in the generation prompt after the last message. */
  messageIndex: number | null;
  role: string | null;
  promptToken: { id: number; text: string };
  /** What the slot holds at that position; null where its cache ends. */
  cachedToken: { id: number; text: string } | null;
  /** The rendered prompt around the divergence. */
  context: string;
}

export interface CacheExplanation {
  promptTokens: number;
  /** The slot a request would take now. */
  slot: number;
  /** Prompt tokens that would be reused (the last prompt token is always evaluated again). */
  cachedTokens: number;
  /** Assistant messages whose recorded tokens were replayed whole. */
  replayed: number[];
  /** Assistant messages of which only a first part was replayed. */
  partlyReplayed: number[];
  /** Null when the whole prompt is in the slot's cache. */
  divergence: CacheDivergence | null;
  /** One line saying all of the above. */
  summary: string;
}

const CONTEXT_CHARS = 40;

export function explainPromptCache(prompt: BuiltPrompt, slots: ReadonlyArray<readonly number[]>, tokenizer: Tokenizer): CacheExplanation {
  const tokens = prompt.tokens;
  let slot = 0;
  let common = -1;
  slots.forEach((cached, i) => {
    const n = commonPrefixLength(cached, tokens);
    if (n > common) [slot, common] = [i, n];
  });
  common = Math.max(common, 0);
  const cachedTokens = Math.min(common, Math.max(tokens.length - 1, 0));
  const base = { promptTokens: tokens.length, slot, cachedTokens, replayed: prompt.replayed, partlyReplayed: prompt.partlyReplayed };
  if (common >= tokens.length) {
    return { ...base, divergence: null, summary: `prompt ${tokens.length} tokens; slot ${slot} holds all of them` };
  }
  const offset = charOffset(prompt, common, tokenizer);
  const starts = prompt.messageStarts();
  const n = prompt.roles.length;
  let messageIndex: number | null = null;
  if (offset < starts[n]!) {
    messageIndex = 0;
    for (let j = 0; j < n; j++) if (starts[j]! <= offset) messageIndex = j;
  }
  const cached = slots[slot]?.[common];
  const divergence: CacheDivergence = {
    tokenIndex: common,
    messageIndex,
    role: messageIndex === null ? null : prompt.roles[messageIndex]!,
    promptToken: { id: tokens[common]!, text: tokenizer.tokenToPiece(tokens[common]!) },
    cachedToken: cached === undefined ? null : { id: cached, text: tokenizer.tokenToPiece(cached) },
    context: prompt.text.slice(Math.max(0, offset - CONTEXT_CHARS), offset + CONTEXT_CHARS),
  };
  const where = messageIndex === null ? 'the generation prompt' : `message ${messageIndex} (${divergence.role})`;
  const what = divergence.cachedToken === null
    ? `the cache ends there`
    : `the prompt has ${JSON.stringify(divergence.promptToken.text)} where the cache has ${JSON.stringify(divergence.cachedToken.text)}`;
  return {
    ...base,
    divergence,
    summary: `prompt ${tokens.length} tokens; slot ${slot} holds the first ${common}; first difference at token ${common}, in ${where}: ${what}`,
  };
}

/** Where token `index` starts in the rendered text (a replayed turn counts as its rendering's start). */
function charOffset(prompt: BuiltPrompt, index: number, tokenizer: Tokenizer): number {
  const seg = prompt.segments.find((s) => index >= s.tokenStart && index < s.tokenEnd);
  if (seg === undefined) return prompt.text.length;
  if (seg.kind === 'replay') return seg.charStart;
  const before = spellTokens(tokenizer, prompt.tokens.slice(seg.tokenStart, index)).length;
  return Math.min(seg.charStart + before, seg.charEnd);
}
