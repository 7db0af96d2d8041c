// SentencePiece BPE over a scored vocabulary (`tokenizer.ggml.model = llama`: Llama 2, Mistral,
// TinyLlama, the stories models), with the semantics of llama.cpp's llm_tokenizer_spm: spaces
// become U+2581, a dummy space prefix starts each text fragment, adjacent symbols merge best
// score first (leftmost on ties), and what no token covers falls back to `<0xNN>` byte tokens.
import { BaseTokenizer, type EncodeSteps } from './base-tokenizer.js';
import { InvalidVocabularyError } from './errors.js';
import { MergeQueue } from './merge-queue.js';
import { TokenType } from './token-type.js';
import type { Vocabulary } from './vocabulary.js';

const SPACE_MARK = '\u2581';
/** Merges between two pause points of an encoding. */
const MERGES_PER_STEP = 2048;
const utf8 = new TextEncoder();

export class SpmTokenizer extends BaseTokenizer {
  private readonly scores: Float32Array;
  private readonly addSpacePrefix: boolean;
  private readonly unkId: number | null;
  /** Token for each byte value: `<0xNN>`, else the one-byte piece, else unk (-1 when none). */
  private readonly byteToken = new Int32Array(256);
  private readonly queue = new MergeQueue();

  constructor(vocab: Vocabulary) {
    super(vocab);
    this.scores = Float32Array.from(vocab.scores ?? new Float32Array(this.vocabSize));
    this.addSpacePrefix = vocab.addSpacePrefix;
    this.unkId = vocab.unkId !== null && vocab.unkId >= 0 && vocab.unkId < this.vocabSize ? vocab.unkId : null;
    for (let b = 0; b < 256; b++) {
      const hex = b.toString(16).toUpperCase().padStart(2, '0');
      this.byteToken[b] = this.tokenToId.get(`<0x${hex}>`)
        ?? (b < 128 ? this.tokenToId.get(String.fromCharCode(b)) : undefined)
        ?? this.unkId ?? -1;
    }
  }

  protected *encodeText(text: string, afterSpecial: boolean, out: number[]): EncodeSteps {
    const s = (this.addSpacePrefix && afterSpecial ? ' ' + text : text).replaceAll(' ', SPACE_MARK);
    // Symbols are code points at first; each covers [start, end) of s, linked to its neighbours.
    const n = s.length;
    const start = new Int32Array(n);
    const end = new Int32Array(n);
    const prev = new Int32Array(n);
    const next = new Int32Array(n);
    let count = 0;
    for (let i = 0; i < n; ) {
      const c = s.charCodeAt(i);
      const len = c >= 0xd800 && c <= 0xdbff && i + 1 < n && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
      start[count] = i;
      end[count] = i + len;
      prev[count] = count - 1;
      next[count] = i + len === n ? -1 : count + 1;
      count++;
      i += len;
    }
    if (count === 0) return;

    // Its own queue: an encoding paused between merges must not share one with another encoding.
    const queue = n > MERGES_PER_STEP ? new MergeQueue() : this.queue;
    queue.clear();
    const tryAdd = (left: number, right: number): void => {
      if (left < 0 || right < 0) return;
      const id = this.tokenToId.get(s.slice(start[left]!, end[right]!));
      // As in SentencePiece, byte pieces come only from byte fallback, never from merges.
      if (id === undefined || !this.isProducible(id) || this.types[id] === TokenType.BYTE) return;
      queue.push(-this.scores[id]!, left, right, end[right]! - start[left]!);
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
      if (end[left]! === start[left]! || end[right]! === start[right]!) continue;
      if (end[right]! - start[left]! !== size || end[left]! !== start[right]!) continue;
      end[left] = end[right]!;
      start[right] = end[right]!; // empty: merged into left
      next[left] = next[right]!;
      if (next[right]! >= 0) prev[next[right]!] = left;
      tryAdd(prev[left]!, left);
      tryAdd(left, next[left]!);
      if (++merges % MERGES_PER_STEP === 0) yield;
    }

    let pieces = 0;
    for (let i = 0; i !== -1; i = next[i]!) {
      if (++pieces % MERGES_PER_STEP === 0) yield;
      const piece = s.slice(start[i]!, end[i]!);
      const id = this.tokenToId.get(piece);
      if (id !== undefined && this.isProducible(id)) {
        out.push(id);
        continue;
      }
      for (const b of utf8.encode(piece)) {
        const byteId = this.byteToken[b]!;
        if (byteId < 0) {
          throw new InvalidVocabularyError(
            `the vocabulary has no token for byte 0x${b.toString(16)} and no unknown token; cannot encode "${piece}"`,
          );
        }
        out.push(byteId);
      }
    }
  }

  protected normalTokenBytes(id: number): Uint8Array {
    const text = this.tokens[id]!;
    const type = this.types[id];
    if (type === TokenType.BYTE) {
      const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(text);
      if (m === null) throw new InvalidVocabularyError(`byte token ${id} is "${text}", expected <0xNN>`);
      return Uint8Array.of(parseInt(m[1]!, 16));
    }
    // llama.cpp writes nothing for unused and undefined tokens.
    if (type !== TokenType.NORMAL) return new Uint8Array(0);
    return utf8.encode(text.replaceAll(SPACE_MARK, ' '));
  }

  // Hugging Face's Llama decoder strips one leading space: the one the dummy prefix put there.
  protected override finishDecode(text: string): string {
    return this.addSpacePrefix && text.startsWith(' ') ? text.slice(1) : text;
  }
}
