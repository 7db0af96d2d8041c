// The parts of a Hugging Face tokenizer.json a conversion reads, checked for shape: the BPE model's
// vocabulary and merges, the added tokens, and the pipeline stages that identify the family.
import { HfModelFormatError } from './errors.js';
import { isRecord } from './read-file.js';
import { MAX_VOCAB } from './limits.js';

export interface HfAddedToken {
  id: number;
  content: string;
  special: boolean;
  /** Whether the tokenizer normalizes the token's text before matching it. */
  normalized?: boolean;
}

export interface HfTokenizerJson {
  model: {
    type?: string;
    vocab: Record<string, number>;
    merges: (string | [string, string])[];
    byte_fallback?: boolean;
    ignore_merges?: boolean;
  };
  added_tokens: HfAddedToken[];
  normalizer?: unknown;
  pre_tokenizer?: unknown;
  post_processor?: unknown;
  decoder?: unknown;
  [key: string]: unknown;
}

/** Checks that `json` has the BPE model and added tokens this converter reads. */
export function checkTokenizerJson(json: unknown, path: string): HfTokenizerJson {
  const fail = (detail: string): never => {
    throw new HfModelFormatError(path, detail);
  };
  if (!isRecord(json)) return fail('should hold a JSON object');
  const model = json['model'];
  if (!isRecord(model)) return fail('has no "model" object');
  if (model['type'] !== undefined && model['type'] !== 'BPE') {
    fail(`has a ${JSON.stringify(model['type'])} model; kiln converts BPE tokenizers (and SentencePiece tokenizer.model files)`);
  }
  const vocab = model['vocab'];
  if (!isRecord(vocab)) return fail('has no model.vocab object');
  const ids = Object.values(vocab);
  if (ids.length > MAX_VOCAB) fail(`model.vocab has ${ids.length} entries, more than the limit of ${MAX_VOCAB}`);
  if (!ids.every(isId)) fail(`model.vocab ids should be integers in [0, ${MAX_VOCAB})`);
  const merges = model['merges'] ?? [];
  if (!Array.isArray(merges) || !merges.every((m) => typeof m === 'string' || (Array.isArray(m) && m.length === 2 && m.every((s) => typeof s === 'string')))) {
    fail('model.merges should be a list of "left right" strings or [left, right] pairs');
  }
  const added = json['added_tokens'] ?? [];
  if (!Array.isArray(added)) return fail('added_tokens should be a list');
  if (added.length > MAX_VOCAB) fail(`added_tokens has ${added.length} entries, more than the limit of ${MAX_VOCAB}`);
  for (const t of added) {
    if (!isRecord(t) || !isId(t['id']) || typeof t['content'] !== 'string') fail('every added_tokens entry needs an integer id and a string content');
  }
  return {
    ...json,
    model: { ...model, vocab: vocab as Record<string, number>, merges: merges as HfTokenizerJson['model']['merges'] },
    added_tokens: (added as Record<string, unknown>[]).map((t) => ({
      id: t['id'] as number,
      content: t['content'] as string,
      special: t['special'] === true,
      ...(typeof t['normalized'] === 'boolean' ? { normalized: t['normalized'] } : {}),
    })),
  };
}

function isId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < MAX_VOCAB;
}
