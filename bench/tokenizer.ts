// `npm run bench -- tokenizer [--mb N] [--family llama2|llama3|qwen3]`: encoding throughput (MB/s
// of UTF-8 input) on a mixed corpus, kiln next to Hugging Face's tokenizers.js in the same run,
// per family; also counts the documents where the two disagree.
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadSentencePieceTokenizer, tokenizerFromGguf } from '../src/tokenizer/load-tokenizer.js';
import type { Tokenizer } from '../src/tokenizer/tokenizer.js';
import { vocabularyFromSentencePiece } from '../src/tokenizer/vocabulary-from-sentencepiece.js';
import { mixedCorpus } from '../test/fixtures/tokenizer/corpus.js';
import { ggufFromTokenizerJson, hfReference, lenmlTokenizer } from '../test/fixtures/tokenizer/hf-vocabulary.js';
import { llamaConverterJson } from '../test/fixtures/tokenizer/llama-converter.js';

interface Contender {
  family: string;
  kiln: Tokenizer;
  hf: HfTokenizer;
}

const LLAMA2_MODEL = fileURLToPath(new URL('../../../shared/models/llama2-tokenizer.model', import.meta.url));

function contenders(only: string | null): Contender[] {
  const out: Contender[] = [];
  if (only === null || only === 'llama2') {
    const vocab = vocabularyFromSentencePiece(readFileSync(LLAMA2_MODEL));
    const pieces = vocab.tokens.map((piece, id) => ({ piece, score: vocab.scores![id]!, type: vocab.tokenTypes![id]! }));
    out.push({ family: 'llama2 (SPM)', kiln: loadSentencePieceTokenizer(LLAMA2_MODEL), hf: new HfTokenizer({ ...llamaConverterJson(pieces), added_tokens: [] }, {}) });
  }
  if (only === null || only === 'llama3') {
    const { json, config } = lenmlTokenizer('llama3');
    const file = ggufFromTokenizerJson(json, { pre: 'llama-bpe', addBos: true, bos: '<|begin_of_text|>', eos: '<|end_of_text|>' });
    out.push({ family: 'llama3 (BPE)', kiln: tokenizerFromGguf(file), hf: hfReference(json, config, false) });
  }
  if (only === null || only === 'qwen3') {
    const { json, config } = lenmlTokenizer('qwen3');
    const file = ggufFromTokenizerJson(json, { pre: 'qwen2', addBos: false, bos: null, eos: '<|im_end|>' });
    out.push({ family: 'qwen3 (BPE)', kiln: tokenizerFromGguf(file), hf: hfReference(json, config, false) });
  }
  return out;
}

function timeIt(docs: string[], encode: (s: string) => number[]): { seconds: number; ids: number[][] } {
  const ids: number[][] = [];
  const t0 = process.hrtime.bigint();
  for (const d of docs) ids.push(encode(d));
  return { seconds: Number(process.hrtime.bigint() - t0) / 1e9, ids };
}

export async function run(args: string[]): Promise<void> {
  const mbIndex = args.indexOf('--mb');
  const mb = mbIndex >= 0 ? Number(args[mbIndex + 1]) : 10;
  const famIndex = args.indexOf('--family');
  const only = famIndex >= 0 ? args[famIndex + 1]! : null;
  const docs = mixedCorpus(mb * 1024 * 1024);
  const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d), 0);
  console.log(`tokenizer bench: ${docs.length} documents, ${(bytes / 1048576).toFixed(1)} MB of mixed text (English, code, JSON, CJK, Arabic, emoji, digits, whitespace)`);
  console.log('family           kiln MB/s   tokenizers.js MB/s   speedup   docs differing');
  for (const c of contenders(only)) {
    // One warm-up pass over a slice, so both sides run compiled code and have their caches started.
    const warm = docs.slice(0, Math.min(200, docs.length));
    timeIt(warm, (s) => c.kiln.encode(s, { addSpecial: false }));
    timeIt(warm, (s) => c.hf.encode(s, { add_special_tokens: false }).ids);
    const kiln = timeIt(docs, (s) => c.kiln.encode(s, { addSpecial: false }));
    const hf = timeIt(docs, (s) => c.hf.encode(s, { add_special_tokens: false }).ids);
    let differing = 0;
    for (let i = 0; i < docs.length; i++) {
      const a = kiln.ids[i]!, b = hf.ids[i]!;
      if (a.length !== b.length || a.some((v, j) => v !== b[j])) differing++;
    }
    const kilnRate = bytes / 1048576 / kiln.seconds;
    const hfRate = bytes / 1048576 / hf.seconds;
    console.log(`${c.family.padEnd(16)} ${kilnRate.toFixed(2).padStart(9)}   ${hfRate.toFixed(2).padStart(18)}   ${(kilnRate / hfRate).toFixed(2).padStart(6)}x   ${differing}`);
  }
}
