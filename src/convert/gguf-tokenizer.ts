// Builds the `tokenizer.ggml.*` metadata of a converted model from its tokenizer files: a
// SentencePiece tokenizer.model when there is one (model "llama"), else a byte-level BPE
// tokenizer.json (model "gpt2"), as convert_hf_to_gguf.py chooses for these families.
import { GgufValueType } from '../gguf/types.js';
import type { GgufWriteValue } from '../gguf/writer.js';
import { UnsupportedTokenizerError } from '../tokenizer/errors.js';
import { bpeVocabulary } from './bpe-vocabulary.js';
import type { HfModelConfig } from './hf-config.js';
import { isRecord } from './read-file.js';
import { choosePreTokenizer } from './pre-tokenizer-name.js';
import { readSpecialTokens, type ChatTemplate, type SpecialTokens, type SpecialTokenType } from './special-tokens.js';
import { spmVocabulary } from './spm-vocabulary.js';
import type { HfTokenizerJson } from './tokenizer-json.js';

export interface HfTokenizerFiles {
  tokenizerJson: HfTokenizerJson | null;
  tokenizerModel: Uint8Array | null;
  tokenizerConfig: Record<string, unknown> | null;
  addedTokens: Record<string, unknown> | null;
  config: Record<string, unknown>;
  generationConfig: Record<string, unknown> | null;
  chatTemplateFile: ChatTemplate | null;
}

export interface GgufTokenizer {
  model: 'llama' | 'gpt2';
  pre: string;
  tokens: string[];
  scores: Float32Array | null;
  tokenTypes: Int32Array;
  merges: string[] | null;
  special: SpecialTokens;
  addSpacePrefix: boolean | null;
  /** How `pre` was chosen (byte-level BPE only). */
  preChoice: { chkhsh: string; by: 'hash' | 'pattern' } | null;
}

export function buildGgufTokenizer(files: HfTokenizerFiles, config: HfModelConfig): GgufTokenizer {
  const tc = files.tokenizerConfig;
  // Only the llama converter writes add_space_prefix from tokenizer_config.json.
  const configPrefix = config.architecture === 'llama' && typeof tc?.['add_prefix_space'] === 'boolean' ? tc['add_prefix_space'] : null;
  const specialSources = {
    tokenizerJson: files.tokenizerJson,
    tokenizerConfig: tc,
    config: files.config,
    generationConfig: files.generationConfig,
    chatTemplateFile: files.chatTemplateFile,
  };

  if (files.tokenizerModel !== null) {
    const spm = spmVocabulary(files.tokenizerModel, {
      vocabSize: config.vocabSize,
      addedTokens: files.addedTokens,
      addedTokensDecoder: isRecord(tc?.['added_tokens_decoder']) ? tc['added_tokens_decoder'] : null,
    });
    const special = readSpecialTokens({ ...specialSources, nVocab: spm.tokens.length });
    // llama.cpp's defaults for SentencePiece are the trainer's usual ids; the model's own are surer.
    for (const type of ['bos', 'eos', 'unk'] as const) {
      const id = spm.trainerIds[type];
      if (special.ids[type] === undefined && id !== null) special.ids[type] = id;
    }
    return {
      model: 'llama', pre: 'default', tokens: spm.tokens, scores: spm.scores, tokenTypes: spm.tokenTypes, merges: null, special,
      // The model's normalizer decides when tokenizer_config.json does not (an addition to the script).
      addSpacePrefix: configPrefix ?? spm.addSpacePrefix,
      preChoice: null,
    };
  }

  const json = files.tokenizerJson!;
  if (json.model.byte_fallback === true) {
    throw new UnsupportedTokenizerError(
      'tokenizer.json is a SentencePiece-style BPE (byte_fallback) but the directory has no tokenizer.model; kiln converts such tokenizers from tokenizer.model',
    );
  }
  const vocab = bpeVocabulary(json, config.vocabSize);
  const choice = choosePreTokenizer(json, vocab);
  return {
    model: 'gpt2', pre: choice.pre, tokens: vocab.tokens, scores: null, tokenTypes: vocab.tokenTypes, merges: vocab.merges,
    special: readSpecialTokens({ ...specialSources, nVocab: null }),
    addSpacePrefix: configPrefix,
    preChoice: { chkhsh: choice.chkhsh, by: choice.by },
  };
}

const ID_KEYS: Record<SpecialTokenType, string> = {
  bos: 'bos_token_id',
  eos: 'eos_token_id',
  unk: 'unknown_token_id',
  sep: 'seperator_token_id', // sic: llama.cpp's key
  pad: 'padding_token_id',
  cls: 'cls_token_id',
  mask: 'mask_token_id',
  eot: 'eot_token_id',
};

/** The tokenizer's GGUF metadata entries. */
export function tokenizerMetadata(t: GgufTokenizer): Array<{ key: string } & GgufWriteValue> {
  const K = 'tokenizer.ggml.';
  const out: Array<{ key: string } & GgufWriteValue> = [
    { key: `${K}model`, type: GgufValueType.STRING, value: t.model },
    { key: `${K}pre`, type: GgufValueType.STRING, value: t.pre },
    { key: `${K}tokens`, type: GgufValueType.ARRAY, elementType: GgufValueType.STRING, value: t.tokens },
  ];
  if (t.scores !== null) out.push({ key: `${K}scores`, type: GgufValueType.ARRAY, elementType: GgufValueType.FLOAT32, value: t.scores });
  out.push({ key: `${K}token_type`, type: GgufValueType.ARRAY, elementType: GgufValueType.INT32, value: t.tokenTypes });
  if (t.merges !== null) out.push({ key: `${K}merges`, type: GgufValueType.ARRAY, elementType: GgufValueType.STRING, value: t.merges });
  for (const [type, id] of Object.entries(t.special.ids) as Array<[SpecialTokenType, number]>) {
    out.push({ key: `${K}${ID_KEYS[type]}`, type: GgufValueType.UINT32, value: id });
  }
  for (const [type, add] of Object.entries(t.special.add)) {
    out.push({ key: `${K}add_${type}_token`, type: GgufValueType.BOOL, value: add });
  }
  if (t.addSpacePrefix !== null) out.push({ key: `${K}add_space_prefix`, type: GgufValueType.BOOL, value: t.addSpacePrefix });
  out.push(...chatTemplateMetadata(t.special.chatTemplate));
  return out;
}

/** A template list becomes tokenizer.chat_template (its "default") plus one named key per other entry, as gguf-py writes it. */
function chatTemplateMetadata(template: ChatTemplate | null): Array<{ key: string } & GgufWriteValue> {
  if (template === null) return [];
  if (typeof template === 'string') return [{ key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: template }];
  const out: Array<{ key: string } & GgufWriteValue> = [];
  const names: string[] = [];
  let fallback: string | null = null;
  for (const { name: raw, template: text } of template) {
    const name = raw.replace(/[^A-Za-z0-9]/g, '_');
    if (name === '') continue;
    if (name === 'default') {
      fallback = text;
    } else if (!names.includes(name)) {
      names.push(name);
      out.push({ key: `tokenizer.chat_template.${name}`, type: GgufValueType.STRING, value: text });
    }
  }
  if (names.length > 0) out.push({ key: 'tokenizer.chat_templates', type: GgufValueType.ARRAY, elementType: GgufValueType.STRING, value: names });
  if (fallback !== null) out.push({ key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: fallback });
  return out;
}

