// What every vocabulary-driven tokenizer shares: special-token splitting, BOS/EOS, token types,
// per-token bytes for decoding, end-of-generation ids. Subclasses supply the text algorithm.
import { InvalidArgumentError } from '../errors.js';
import { InvalidVocabularyError } from './errors.js';
import { SpecialTokenSplitter } from './special-token-splitter.js';
import { Utf8StreamingDetokenizer, type StreamingDetokenizer } from './streaming-detokenizer.js';
import type { AsyncEncodeOptions, DecodeOptions, DecoderOptions, EncodeOptions, Tokenizer } from './tokenizer.js';
import { TokenType } from './token-type.js';
import type { Vocabulary } from './vocabulary.js';

/** Largest vocabulary accepted; real models stay below 300k, this only bounds hostile files. */
export const MAX_VOCAB_SIZE = 1 << 22;

// Tokens whose text marks the end of a turn in the chat formats kiln supports (llama.cpp's list).
const EOG_TEXTS = ['<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|eom_id|>', '<EOT>'];

const utf8 = new TextEncoder();

/** How long encodeAsync works before it lets the event loop run (other streams wait this long at most). */
export const ENCODE_SLICE_MS = 2;

/** The steps of an encoding: each `yield` is a point where the work may pause. */
export type EncodeSteps = Generator<void, void, undefined>;

export abstract class BaseTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly maxTokenChars: number;
  protected readonly tokens: readonly string[];
  protected readonly types: Uint8Array;
  protected readonly tokenToId = new Map<string, number>();
  private readonly splitter: SpecialTokenSplitter;
  private readonly eog = new Set<number>();
  private readonly bytesCache: (Uint8Array | undefined)[];
  private readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true });

  constructor(vocab: Vocabulary) {
    const n = vocab.tokens.length;
    if (n === 0 || n > MAX_VOCAB_SIZE) {
      throw new InvalidVocabularyError(`tokenizer vocabulary has ${n} tokens; expected 1 to ${MAX_VOCAB_SIZE}`);
    }
    for (const [name, arr] of [['scores', vocab.scores], ['token types', vocab.tokenTypes]] as const) {
      if (arr !== null && arr.length !== n) {
        throw new InvalidVocabularyError(`tokenizer ${name} has ${arr.length} entries but the vocabulary has ${n} tokens`);
      }
    }
    this.vocabSize = n;
    this.tokens = vocab.tokens;
    this.types = new Uint8Array(n);
    for (let id = 0; id < n; id++) {
      const t = vocab.tokenTypes === null ? TokenType.NORMAL : vocab.tokenTypes[id]!;
      this.types[id] = t >= 0 && t <= TokenType.BYTE ? t : TokenType.UNDEFINED;
      // First occurrence wins for duplicated pieces, so encoding picks the lowest id.
      if (!this.tokenToId.has(vocab.tokens[id]!)) this.tokenToId.set(vocab.tokens[id]!, id);
    }
    this.bosId = checkedId(vocab.bosId, n, 'BOS');
    this.eosId = checkedId(vocab.eosId, n, 'EOS');
    this.addBos = vocab.addBos && this.bosId !== null;
    this.addEos = vocab.addEos && this.eosId !== null;
    if (this.eosId !== null) this.eog.add(this.eosId);
    for (const id of vocab.extraEogIds) {
      const checked = checkedId(id, n, 'end-of-generation');
      if (checked !== null) this.eog.add(checked);
    }
    for (const text of EOG_TEXTS) {
      const id = this.tokenToId.get(text);
      if (id !== undefined) {
        this.eog.add(id);
        this.types[id] = TokenType.CONTROL; // llama.cpp does the same for converters that forgot
      }
    }
    this.splitter = new SpecialTokenSplitter(vocab.tokens, this.types);
    // A token's text is never longer than its spelling in the vocabulary (byte-level BPE spells
    // each UTF-8 byte as one character; SentencePiece writes a space as one character); a byte
    // token stands for one byte.
    let longest = 1;
    for (let id = 0; id < n; id++) {
      const t = this.types[id];
      if (t !== TokenType.CONTROL && t !== TokenType.UNKNOWN && t !== TokenType.BYTE) longest = Math.max(longest, vocab.tokens[id]!.length);
    }
    this.maxTokenChars = longest;
    this.bytesCache = new Array<Uint8Array | undefined>(n);
  }

  encode(text: string, opts: EncodeOptions = {}): number[] {
    const out: number[] = [];
    const steps = this.encodeSteps(text, opts, out);
    while (!steps.next().done);
    return out;
  }

  async encodeAsync(text: string, opts: AsyncEncodeOptions = {}): Promise<number[]> {
    const out: number[] = [];
    const limit = opts.maxTokens ?? Infinity;
    const sliceMs = opts.sliceMs ?? ENCODE_SLICE_MS;
    const steps = this.encodeSteps(text, opts, out);
    let sliceStart = performance.now();
    while (!steps.next().done) {
      if (out.length > limit) break;
      if (performance.now() - sliceStart >= sliceMs) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
    return out;
  }

  private *encodeSteps(text: string, opts: EncodeOptions, out: number[]): EncodeSteps {
    const addSpecial = opts.addSpecial ?? true;
    if (addSpecial && this.addBos) out.push(this.bosId!);
    let afterSpecial = true;
    for (const fragment of this.splitter.split(text, opts.parseSpecial ?? false)) {
      if (typeof fragment === 'number') {
        out.push(fragment);
        afterSpecial = true;
      } else {
        yield* this.encodeText(fragment, afterSpecial, out);
        afterSpecial = false;
      }
    }
    if (addSpecial && this.addEos) out.push(this.eosId!);
  }

  decode(ids: ArrayLike<number>, opts: DecodeOptions = {}): string {
    const skip = opts.skipSpecial ?? false;
    const parts: Uint8Array[] = [];
    let total = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (skip && this.isSkippable(id)) continue;
      const b = this.pieceBytes(id);
      parts.push(b);
      total += b.length;
    }
    const all = new Uint8Array(total);
    let off = 0;
    for (const b of parts) {
      all.set(b, off);
      off += b.length;
    }
    return this.finishDecode(this.decoder.decode(all));
  }

  tokenToPiece(id: number): string {
    return this.decoder.decode(this.pieceBytes(id));
  }

  isEog(id: number): boolean {
    return this.eog.has(id);
  }

  isControl(id: number): boolean {
    return this.types[id] === TokenType.CONTROL;
  }

  createDecoder(opts: DecoderOptions = {}): StreamingDetokenizer {
    const skip = opts.skipSpecial ?? false;
    const none = new Uint8Array(0);
    return new Utf8StreamingDetokenizer((id) => (skip && this.isSkippable(id) ? none : this.pieceBytes(id)));
  }

  /** The bytes a token stands for; control tokens by their text. */
  pieceBytes(id: number): Uint8Array {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
      throw new InvalidArgumentError(`token id ${id} is outside the vocabulary (0..${this.vocabSize - 1})`);
    }
    let b = this.bytesCache[id];
    if (b === undefined) {
      const type = this.types[id];
      b = type === TokenType.CONTROL || type === TokenType.USER_DEFINED || type === TokenType.UNKNOWN
        ? utf8.encode(this.tokens[id]!)
        : this.normalTokenBytes(id);
      this.bytesCache[id] = b;
    }
    return b;
  }

  /**
   * Whether the text algorithm may produce this token. Control and unknown tokens come only from
   * special-token matching, so user text can never turn into one through merges.
   */
  protected isProducible(id: number): boolean {
    const type = this.types[id];
    return type !== TokenType.CONTROL && type !== TokenType.UNKNOWN;
  }

  private isSkippable(id: number): boolean {
    const type = this.types[id];
    return type === TokenType.CONTROL || type === TokenType.UNKNOWN;
  }

  /**
   * Appends the ids of a piece of text that holds no special token, yielding every so often (a
   * few hundred microseconds of work at most between two yields) so encodeAsync can pause.
   */
  protected abstract encodeText(text: string, afterSpecial: boolean, out: number[]): EncodeSteps;

  /** The bytes of a token that is not control, unknown or user-defined. */
  protected abstract normalTokenBytes(id: number): Uint8Array;

  /** Adjusts a whole decoded sequence (SentencePiece drops its dummy-prefix space here). */
  protected finishDecode(text: string): string {
    return text;
  }
}

function checkedId(id: number | null, n: number, what: string): number | null {
  if (id === null) return null;
  if (!Number.isInteger(id) || id < 0 || id >= n) {
    throw new InvalidVocabularyError(`${what} token id ${id} is outside the vocabulary of ${n} tokens`);
  }
  return id;
}
