// Byte-level BPE (`tokenizer.ggml.model = gpt2`: Llama 3, Qwen2/3, Mistral Nemo): the
// pre-tokenizer cuts text into words, each word is spelled in GPT-2's byte alphabet, and adjacent
// symbols merge lowest merge rank first (leftmost on ties), as Hugging Face's BPE does.
import { BaseTokenizer } from './base-tokenizer.js';
import { fromByteLevel, toByteLevel } from './byte-level.js';
import { MergeQueue } from './merge-queue.js';
import { preTokenizerFor, type PreTokenizer } from './pre-tokenizer.js';
import type { Vocabulary } from './vocabulary.js';

/** Words remembered with their ids; cleared when full. Natural text repeats words a lot. */
const WORD_CACHE_SIZE = 1 << 16;
/** Packs a merge's rank and result id into one number: id < 2^22 (MAX_VOCAB_SIZE). */
const ID_SPAN = 1 << 22;

export class BpeTokenizer extends BaseTokenizer {
  readonly pre: PreTokenizer;
  /** (left id * vocabSize + right id) -> rank * ID_SPAN + merged id. */
  private readonly merges = new Map<number, number>();
  private readonly cache = new Map<string, number[]>();
  private readonly queue = new MergeQueue();
  private ids = new Int32Array(64);
  private lens = new Int32Array(64);
  private prev = new Int32Array(64);
  private next = new Int32Array(64);

  constructor(vocab: Vocabulary) {
    super(vocab);
    this.pre = preTokenizerFor(vocab.pre);
    const merges = vocab.merges ?? [];
    const v = this.vocabSize;
    for (let rank = 0; rank < merges.length; rank++) {
      const m = merges[rank]!;
      const sp = m.indexOf(' ', 1);
      if (sp < 0) continue;
      const left = this.tokenToId.get(m.slice(0, sp));
      const right = this.tokenToId.get(m.slice(sp + 1));
      const merged = this.tokenToId.get(m.slice(0, sp) + m.slice(sp + 1));
      // A merge whose parts or result are not tokens can never apply.
      if (left === undefined || right === undefined || merged === undefined || !this.isProducible(merged)) continue;
      const key = left * v + right;
      if (!this.merges.has(key)) this.merges.set(key, rank * ID_SPAN + merged);
    }
  }

  protected encodeText(text: string, _afterSpecial: boolean, out: number[]): void {
    const s = this.pre.nfc ? text.normalize('NFC') : text;
    const re = this.pre.regex;
    re.lastIndex = 0;
    let last = 0;
    for (let m = re.exec(s); m !== null; m = re.exec(s)) {
      if (m.index > last) this.encodeWord(s.slice(last, m.index), out);
      this.encodeWord(m[0], out);
      last = m.index + m[0].length;
    }
    if (last < s.length) this.encodeWord(s.slice(last), out);
  }

  private encodeWord(word: string, out: number[]): void {
    const cached = this.cache.get(word);
    if (cached !== undefined) {
      for (const id of cached) out.push(id);
      return;
    }
    const ids = this.bpe(toByteLevel(word));
    if (this.cache.size >= WORD_CACHE_SIZE) this.cache.clear();
    this.cache.set(word, ids);
    for (const id of ids) out.push(id);
  }

  private bpe(word: string): number[] {
    const whole = this.tokenToId.get(word);
    if (whole !== undefined && this.isProducible(whole) && (this.pre.ignoreMerges || word.length === 1)) return [whole];
    const n = word.length; // byte-level spelling: every code point is in the BMP
    if (this.ids.length < n) this.grow(n);
    const { ids, lens, prev, next, queue } = this;
    const v = this.vocabSize;
    let count = 0;
    for (let i = 0; i < n; i++) {
      // A byte with no token (a vocabulary without the full alphabet) is dropped, as llama.cpp does.
      const id = this.tokenToId.get(word[i]!);
      if (id === undefined || !this.isProducible(id)) continue;
      ids[count] = id;
      lens[count] = 1;
      prev[count] = count - 1;
      next[count] = count + 1;
      count++;
    }
    if (count === 0) return [];
    next[count - 1] = -1;

    queue.clear();
    const tryAdd = (left: number, right: number): void => {
      if (left < 0 || right < 0) return;
      const m = this.merges.get(ids[left]! * v + ids[right]!);
      if (m !== undefined) queue.push(Math.floor(m / ID_SPAN), left, right, lens[left]! + lens[right]!);
    };
    for (let i = 1; i < count; i++) tryAdd(i - 1, i);
    const top: [number, number, number] = [0, 0, 0];
    while (queue.length > 0) {
      queue.pop(top);
      const [left, right, size] = top;
      // Skip pairs whose symbols were merged away or grew since the pair was queued.
      if (lens[left] === 0 || lens[right] === 0 || lens[left]! + lens[right]! !== size) continue;
      ids[left] = this.merges.get(ids[left]! * v + ids[right]!)! % ID_SPAN;
      lens[left] = size;
      lens[right] = 0;
      next[left] = next[right]!;
      if (next[right]! >= 0) prev[next[right]!] = left;
      tryAdd(prev[left]!, left);
      tryAdd(left, next[left]!);
    }
    const result: number[] = [];
    for (let i = 0; i !== -1; i = next[i]!) result.push(ids[i]!);
    return result;
  }

  private grow(n: number): void {
    const size = Math.max(n, this.ids.length * 2);
    this.ids = new Int32Array(size);
    this.lens = new Int32Array(size);
    this.prev = new Int32Array(size);
    this.next = new Int32Array(size);
  }

  protected normalTokenBytes(id: number): Uint8Array {
    return fromByteLevel(this.tokens[id]!);
  }
}
