// The pre-tokenizers named by `tokenizer.ggml.pre`: the regex that cuts text into words before
// byte-level BPE, plus what else the family does (Qwen normalizes to NFC, Llama 3 and Tekken take
// a word that is itself a token without merging). `\s` is written as \p{White_Space}, as the
// reference tokenizers mean it (JS's \s would add U+FEFF and drop U+0085).
import { UnsupportedTokenizerError } from './errors.js';

export interface PreTokenizer {
  name: string;
  /** Global, unicode regex whose matches are the words. */
  regex: RegExp;
  nfc: boolean;
  ignoreMerges: boolean;
}

const S = '\\p{White_Space}';
const NOT_S = '\\P{White_Space}';
const CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

// Llama 3's pattern with digits in runs of at most three; Qwen2 takes digits one at a time.
const llama3Like = (digits: string): string =>
  `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|${digits}| ?[^${S}\\p{L}\\p{N}]+[\\r\\n]*|${S}*[\\r\\n]+|${S}+(?!${NOT_S})|${S}+`;

const PATTERNS: Record<string, { source: string; nfc: boolean; ignoreMerges: boolean }> = {
  'llama3': { source: llama3Like('\\p{N}{1,3}'), nfc: false, ignoreMerges: true },
  'qwen2': { source: llama3Like('\\p{N}'), nfc: true, ignoreMerges: false },
  'gpt-2': {
    source: `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^${S}\\p{L}\\p{N}]+|${S}+(?!${NOT_S})|${S}+`,
    nfc: false,
    ignoreMerges: false,
  },
  'tekken': {
    source: '[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+'
      + '|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*'
      + `|\\p{N}| ?[^${S}\\p{L}\\p{N}]+[\\r\\n/]*|${S}*[\\r\\n]+|${S}+(?!${NOT_S})|${S}+`,
    nfc: false,
    ignoreMerges: true,
  },
};

// Names llama.cpp's converter writes for the same pre-tokenizers.
const ALIASES: Record<string, string> = {
  'llama-bpe': 'llama3',
  'llama3': 'llama3',
  'llama-v3': 'llama3',
  'qwen2': 'qwen2',
  'gpt-2': 'gpt-2',
  'tekken': 'tekken',
};

export function preTokenizerFor(pre: string | null): PreTokenizer {
  const name = pre === null ? undefined : ALIASES[pre];
  if (name === undefined) {
    const supported = Object.keys(ALIASES).join(', ');
    throw new UnsupportedTokenizerError(
      pre === null
        ? `the byte-level BPE tokenizer has no tokenizer.ggml.pre; kiln needs one of: ${supported}`
        : `pre-tokenizer "${pre}" (tokenizer.ggml.pre) is not supported; supported: ${supported}`,
    );
  }
  const p = PATTERNS[name]!;
  return { name, regex: new RegExp(p.source, 'gu'), nfc: p.nfc, ignoreMerges: p.ignoreMerges };
}
