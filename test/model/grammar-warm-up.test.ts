// The grammar engine's once-per-vocabulary warm-up on a SentencePiece vocabulary (Llama 2, from the
// shared GGUF): its tokenizer spells JSON with a leading space the grammar refuses, so the warm-up
// spells each instance in the longest allowed tokens and must take every one whole.
import { expect, test } from 'vitest';
import { tokenIndexOf } from '../../src/grammar/token-index.js';
import { WARM_UP_CASES, warmUpMatcher } from '../../src/grammar/warm-up.js';
import { loadTokenizer } from '../../src/tokenizer/load-tokenizer.js';

const GGUF_PATH = new URL('../../../shared/models/llama-2-tiny-random.gguf', import.meta.url).pathname;

test('the warm-up takes each of its instances whole on the Llama 2 vocabulary', () => {
  const tok = loadTokenizer(GGUF_PATH);
  expect(tok.encode(JSON.stringify(WARM_UP_CASES[0]![1]), { addSpecial: false }).map((id) => tok.tokenToPiece(id))[0]).toMatch(/^ /);
  expect(warmUpMatcher(tokenIndexOf(tok))).toBe(WARM_UP_CASES.length);
});
