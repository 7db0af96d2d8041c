// Reads a SentencePiece `.model` file (a protobuf ModelProto) into a Vocabulary, decoding it with
// protobufjs against the schema kept beside this file (sentencepiece_model.proto).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { InvalidVocabularyError, UnsupportedTokenizerError } from './errors.js';
import { TokenType } from './token-type.js';
import type { Vocabulary } from './vocabulary.js';

/** Largest `.model` accepted: real ones are under 5 MB; this bounds what a hostile file costs. */
export const MAX_SENTENCEPIECE_BYTES = 64 * 1024 * 1024;

const BPE = 2;

interface PieceMessage { piece: string; score: number; type: number }
interface ModelMessage {
  pieces: PieceMessage[];
  trainerSpec?: { modelType: number; byteFallback: boolean; unkId: number; bosId: number; eosId: number; padId: number };
  normalizerSpec?: { addDummyPrefix: boolean };
}

let modelType: protobuf.Type | null = null;

// The schema is read from src/ when running from sources, and from the package's src/ folder when
// running the compiled dist/src/ build (tsc does not copy .proto files).
function schema(): protobuf.Type {
  if (modelType === null) {
    const candidates = ['./sentencepiece_model.proto', '../../../src/tokenizer/sentencepiece_model.proto']
      .map((p) => fileURLToPath(new URL(p, import.meta.url)));
    const path = candidates.find((p) => existsSync(p));
    if (path === undefined) throw new Error(`sentencepiece_model.proto not found (looked at ${candidates.join(', ')})`);
    modelType = protobuf.loadSync(path).lookupType('sentencepiece.ModelProto');
  }
  return modelType;
}

export function vocabularyFromSentencePiece(bytes: Uint8Array): Vocabulary {
  if (bytes.length > MAX_SENTENCEPIECE_BYTES) {
    throw new InvalidVocabularyError(`SentencePiece model is ${bytes.length} bytes; the limit is ${MAX_SENTENCEPIECE_BYTES}`);
  }
  const type = schema();
  let model: ModelMessage;
  try {
    model = type.toObject(type.decode(bytes), { defaults: true, enums: Number }) as ModelMessage;
  } catch (err) {
    throw new InvalidVocabularyError(`not a SentencePiece model: ${(err as Error).message}`, { cause: err });
  }
  const trainer = model.trainerSpec;
  if (trainer === undefined || model.pieces.length === 0) {
    throw new InvalidVocabularyError('not a SentencePiece model: it has no pieces or no trainer_spec');
  }
  if (trainer.modelType !== BPE) {
    throw new UnsupportedTokenizerError(
      `SentencePiece model type ${trainer.modelType} is not supported; kiln reads BPE models (type 2: Llama 2, Mistral)`,
    );
  }
  const n = model.pieces.length;
  const id = (v: number): number | null => (v >= 0 && v < n ? v : null);
  return {
    model: 'llama',
    pre: null,
    tokens: model.pieces.map((p) => p.piece),
    scores: Float32Array.from(model.pieces, (p) => p.score),
    tokenTypes: Int32Array.from(model.pieces, (p) => (p.type >= TokenType.NORMAL && p.type <= TokenType.BYTE ? p.type : TokenType.NORMAL)),
    merges: null,
    bosId: id(trainer.bosId),
    eosId: id(trainer.eosId),
    unkId: id(trainer.unkId),
    padId: id(trainer.padId),
    extraEogIds: [],
    addBos: id(trainer.bosId) !== null,
    addEos: false,
    addSpacePrefix: model.normalizerSpec?.addDummyPrefix ?? true,
  };
}
