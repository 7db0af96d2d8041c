// Chooses `tokenizer.ggml.pre` for a byte-level BPE tokenizer.json the way convert_hf_to_gguf.py
// does: encode a fixed probe text, hash the ids, and look the hash up in the table of known
// tokenizers. kiln's own tokenizer stands in for transformers' (it agrees with it on these
// families). A tokenizer.json missing from the table (a re-packaged file whose post-processor
// differs, say) is named by its pre-tokenizer regex instead, when that is one kiln implements.
import { createHash } from 'node:crypto';
import { createTokenizer } from '../tokenizer/create-tokenizer.js';
import { UnsupportedTokenizerError } from '../tokenizer/errors.js';
import type { BpeVocabulary } from './bpe-vocabulary.js';
import { isRecord } from './read-file.js';
import type { HfTokenizerJson } from './tokenizer-json.js';

/** The script's probe text (get_vocab_base_pre's chktxt), character for character. */
export const CHKTXT = '\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български \'\'\'\'\'\'```````""""......!!!!!!?????? I\'ve been \'told he\'s there, \'RE you sure? \'M not sure I\'ll make it, \'D you like some tea? We\'Ve a\'lL';

/** The script's table, limited to the pre-tokenizers kiln implements. */
const KNOWN_CHKHSH: Record<string, string> = {
  '0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5': 'llama-bpe', // meta-llama/Meta-Llama-3-8B
  'e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea': 'qwen2', // Qwen/Qwen1.5-7B
  'd4540891389ea895b53b399da6ac824becc30f2fba0e9ddbb98f92e55ca0e97c': 'qwen2', // Qwen/Qwen3-Embedding-0.6B
  '63b97e4253352e6f357cc59ea5b583e3a680eaeaf2632188c2b952de2588485e': 'tekken', // mistralai/Mistral-Nemo-Base-2407
  '3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454': 'gpt-2', // openai-community/gpt2
  '0fe1cf6eda062318a1af7270f3331a85c539a01778ff948e24388e949c5282f4': 'gpt-2', // evilfreelancer/ruGPT3XL
};

/** Split regexes as tokenizer.json files of each family write them. */
const PATTERNS: Record<string, string> = {
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": 'llama-bpe',
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": 'qwen2',
  '[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+': 'tekken',
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+": 'gpt-2',
};

const SUPPORTED = ['llama-bpe', 'qwen2', 'tekken', 'gpt-2'];

export interface PreTokenizerChoice {
  pre: string;
  /** The script's chkhsh of this tokenizer. */
  chkhsh: string;
  /** 'hash' when the script's table names it; 'pattern' when only its regex does. */
  by: 'hash' | 'pattern';
}

export function choosePreTokenizer(json: HfTokenizerJson, vocab: BpeVocabulary): PreTokenizerChoice {
  const byPattern = preFromPattern(json.pre_tokenizer);
  let chkhsh = '';
  for (const pre of byPattern === null ? SUPPORTED : [byPattern]) {
    chkhsh = probeHash(json, vocab, pre);
    const known = KNOWN_CHKHSH[chkhsh];
    if (known !== undefined) return { pre: known, chkhsh, by: 'hash' };
  }
  if (byPattern !== null) return { pre: byPattern, chkhsh, by: 'pattern' };
  throw new UnsupportedTokenizerError(
    `tokenizer.json's BPE pre-tokenizer is not one kiln implements (chkhsh ${chkhsh}; kiln converts ${SUPPORTED.join(', ')}: Llama 3, Qwen2/2.5/3, Mistral Nemo/Small 3, GPT-2)`,
  );
}

/** sha256 of Python's str() of the ids transformers' encode(CHKTXT) gives, special tokens included. */
function probeHash(json: HfTokenizerJson, vocab: BpeVocabulary, pre: string): string {
  const tokenizer = createTokenizer({
    model: 'gpt2', pre, tokens: vocab.tokens, scores: null, tokenTypes: vocab.tokenTypes, merges: vocab.merges,
    bosId: null, eosId: null, unkId: null, padId: null, extraEogIds: [], addBos: false, addEos: false, addSpacePrefix: false,
  });
  const { prefix, suffix } = templateIds(json.post_processor);
  const ids = [...prefix, ...tokenizer.encode(CHKTXT, { addSpecial: false, parseSpecial: true }), ...suffix];
  return createHash('sha256').update(`[${ids.join(', ')}]`).digest('hex');
}

/** The special token ids a TemplateProcessing post-processor puts before and after a single text. */
function templateIds(post: unknown): { prefix: number[]; suffix: number[] } {
  const out = { prefix: [] as number[], suffix: [] as number[] };
  const processors = isRecord(post) ? (Array.isArray(post['processors']) ? post['processors'] : [post]) : [];
  for (const p of processors) {
    if (!isRecord(p) || p['type'] !== 'TemplateProcessing' || !Array.isArray(p['single'])) continue;
    const specials = isRecord(p['special_tokens']) ? p['special_tokens'] : {};
    let side: number[] = out.prefix;
    for (const piece of p['single'] as unknown[]) {
      if (!isRecord(piece)) continue;
      if (isRecord(piece['Sequence'])) {
        side = out.suffix;
      } else if (isRecord(piece['SpecialToken'])) {
        const entry = specials[piece['SpecialToken']['id'] as string];
        if (isRecord(entry) && Array.isArray(entry['ids'])) side.push(...entry['ids'].filter((id): id is number => typeof id === 'number'));
      }
    }
  }
  return out;
}

/** The pre-tokenizer a tokenizer.json's Split regex (or GPT-2's ByteLevel regex) names. */
function preFromPattern(pre: unknown): string | null {
  if (!isRecord(pre)) return null;
  const steps = pre['type'] === 'Sequence' && Array.isArray(pre['pretokenizers']) ? (pre['pretokenizers'] as unknown[]) : [pre];
  for (const step of steps) {
    if (!isRecord(step)) continue;
    if (step['type'] === 'ByteLevel' && step['use_regex'] === true) return 'gpt-2';
    if (step['type'] === 'Split' && isRecord(step['pattern']) && typeof step['pattern']['Regex'] === 'string') {
      return PATTERNS[step['pattern']['Regex']] ?? null;
    }
  }
  return null;
}
