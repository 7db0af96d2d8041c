// Byte-level BPE (`tokenizer.ggml.model = gpt2`: Llama 3, Qwen2/3, Mistral Nemo): the
// pre-tokenizer cuts text into words, each word is spelled in GPT-2's byte alphabet, and adjacent
// symbols merge lowest merge rank first (leftmost on ties), as Hugging Face's BPE does.
import { BaseTokenizer, type EncodeSteps } from './base-tokenizer.js';
import { fromByteLevel, toByteLevel } from './byte-level.js';
import { MergeQueue } from './merge-queue.js';
import { preTokenizerFor, type PreTokenizer } from './pre-tokenizer.js';
import type { Vocabulary } from './vocabulary.js';

/** Words remembered with their ids; cleared when full. Natural text repeats words a lot. */
const WORD_CACHE_SIZE = 1 << 16;
/**
 * The cache's memory bound (its own accounting: two bytes a character and eight an id, plus an
 * entry's overhead), whatever the words; text is client input, so its size is not ours to choose.
 */
export const MAX_WORD_CACHE_BYTES = 16 << 20;
/** Longer words are not cached (as Hugging Face's BPE): they rarely repeat, and one would fill the cache. */
export const MAX_CACHED_WORD_CHARS = 256;
const CACHE_ENTRY_OVERHEAD = 64;
/** Words between two pause points of an encoding. */
const WORDS_PER_STEP = 128;
/** Merges between two pause points inside one long word. */
const MERGES_PER_STEP = 4096;
/** Words longer than this merge in arrays of their own, so an encoding paused inside one cannot be disturbed. */
const SCRATCH_WORD_CHARS = 1024;
/** Packs a merge's rank and result id into one number: id < 2^22 (MAX_VOCAB_SIZE). */
const ID_SPAN = 1 << 22;

export class BpeTokenizer extends BaseTokenizer {
  readonly pre: PreTokenizer;
  /** (left id * vocabSize + right id) -> rank * ID_SPAN + merged id. */
  private readonly merges = new Map<number, number>();
  private readonly cache = new Map<string, number[]>();
  private cacheBytes = 0;
  private readonly scratch = new MergeScratch(64);

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

  protected *encodeText(text: string, _afterSpecial: boolean, out: number[]): EncodeSteps {
    const s = this.pre.nfc ? text.normalize('NFC') : text;
    const re = this.pre.regex;
    let last = 0;
    let words = 0;
    for (;;) {
      // The regex is shared: a paused encoding sets its own position again when it resumes.
      re.lastIndex = last;
      const m = re.exec(s);
      if (m === null) break;
      if (m.index > last) yield* this.encodeWord(s.slice(last, m.index), out);
      yield* this.encodeWord(m[0], out);
      last = m.index + m[0].length;
      if (++words % WORDS_PER_STEP === 0) yield;
    }
    if (last < s.length) yield* this.encodeWord(s.slice(last), out);
  }

  /** The number of bytes the word cache accounts for now. */
  get wordCacheBytes(): number {
    return this.cacheBytes;
  }

  private *encodeWord(word: string, out: number[]): EncodeSteps {
    const cached = this.cache.get(word);
    if (cached !== undefined) {
      for (const id of cached) out.push(id);
      return;
    }
    const spelled = toByteLevel(word);
    const ids: number[] = [];
    if (spelled.length <= SCRATCH_WORD_CHARS) {
      const steps = this.bpe(spelled, this.scratch, ids);
      while (!steps.next().done);
    } else {
      yield* this.bpe(spelled, new MergeScratch(spelled.length), ids);
    }
    if (word.length <= MAX_CACHED_WORD_CHARS) this.remember(word, ids);
    for (const id of ids) out.push(id);
  }

  private remember(word: string, ids: number[]): void {
    const bytes = CACHE_ENTRY_OVERHEAD + 2 * word.length + 8 * ids.length;
    if (this.cache.size >= WORD_CACHE_SIZE || this.cacheBytes + bytes > MAX_WORD_CACHE_BYTES) {
      this.cache.clear();
      this.cacheBytes = 0;
    }
    // The word is a slice of the request's text; a slice keeps all of that text alive.
    this.cache.set(copyOf(word), ids);
    this.cacheBytes += bytes;
  }

  private *bpe(word: string, scratch: MergeScratch, result: number[]): EncodeSteps {
    const whole = this.tokenToId.get(word);
    if (whole !== undefined && this.isProducible(whole) && (this.pre.ignoreMerges || word.length === 1)) {
      result.push(whole);
      return;
    }
    const n = word.length; // byte-level spelling: every code point is in the BMP
    if (scratch.ids.length < n) scratch.grow(n);
    const { ids, lens, prev, next, queue } = scratch;
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
      if (count % MERGES_PER_STEP === 0) yield;
    }
    if (count === 0) return;
    next[count - 1] = -1;

    queue.clear();
    const tryAdd = (left: number, right: number): void => {
      if (left < 0 || right < 0) return;
      const m = this.merges.get(ids[left]! * v + ids[right]!);
      if (m !== undefined) queue.push(Math.floor(m / ID_SPAN), left, right, lens[left]! + lens[right]!);
    };
    for (let i = 1; i < count; i++) {
      tryAdd(i - 1, i);
      if (i % MERGES_PER_STEP === 0) yield;
    }
    const top: [number, number, number] = [0, 0, 0];
    let merges = 0;
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
      if (++merges % MERGES_PER_STEP === 0) yield;
    }
    for (let i = 0; i !== -1; i = next[i]!) result.push(ids[i]!);
  }

  protected normalTokenBytes(id: number): Uint8Array {
    return fromByteLevel(this.tokens[id]!);
  }
}

/** The arrays one word's merges work in. */
class MergeScratch {
  readonly queue = new MergeQueue();
  ids: Int32Array;
  lens: Int32Array;
  prev: Int32Array;
  next: Int32Array;

  constructor(size: number) {
    this.ids = new Int32Array(size);
    this.lens = new Int32Array(size);
    this.prev = new Int32Array(size);
    this.next = new Int32Array(size);
  }

  grow(n: number): void {
    const size = Math.max(n, this.ids.length * 2);
    this.ids = new Int32Array(size);
    this.lens = new Int32Array(size);
    this.prev = new Int32Array(size);
    this.next = new Int32Array(size);
  }
}

/** A string with storage of its own (V8 makes short strings copies, longer ones views of their parent). */
function copyOf(s: string): string {
  return s.length <= 12 ? s : Buffer.from(s, 'utf16le').toString('utf16le');
}
