// Finds and reads the files of a Hugging Face model directory: config.json, the safetensors weight
// shards (listed by model.safetensors.index.json, or model*.safetensors), and the tokenizer files.
import { readdirSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { HfModelFileMissingError, HfModelFormatError } from './errors.js';
import type { HfTokenizerFiles } from './gguf-tokenizer.js';
import { readHfConfig, type HfModelConfig } from './hf-config.js';
import { isRecord, readOptionalBytes, readOptionalJson, readOptionalJsonObject, readOptionalText } from './read-file.js';
import { MAX_CONFIG_BYTES, MAX_INDEX_BYTES, MAX_TOKENIZER_JSON_BYTES, MAX_WEIGHT_FILES } from './limits.js';
import { isChatTemplate, type ChatTemplate } from './special-tokens.js';
import { checkTokenizerJson } from './tokenizer-json.js';
import { MAX_SENTENCEPIECE_BYTES } from '../tokenizer/vocabulary-from-sentencepiece.js';

export interface HfModelDir {
  dir: string;
  /** The directory's name: general.name, as the script falls back to it. */
  name: string;
  config: HfModelConfig;
  /** Absolute paths of the weight shards, sorted. */
  weightFiles: string[];
  /** Tensor names model.safetensors.index.json lists, or null without an index. */
  indexedTensors: Set<string> | null;
  tokenizer: HfTokenizerFiles;
}

export function readModelDir(dirArg: string): HfModelDir {
  const dir = resolve(dirArg);
  let stat;
  try {
    stat = statSync(dir, { throwIfNoEntry: false });
  } catch (err) {
    throw new HfModelFileMissingError(dir, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!stat) throw new HfModelFileMissingError(dir, 'does not exist');
  if (!stat.isDirectory()) throw new HfModelFileMissingError(dir, 'is not a directory');

  const configPath = join(dir, 'config.json');
  const configJson = readOptionalJsonObject(configPath, MAX_CONFIG_BYTES);
  if (configJson === null) throw new HfModelFileMissingError(configPath, 'does not exist');
  const config = readHfConfig(configJson, configPath);

  const { weightFiles, indexedTensors } = findWeights(dir);
  return { dir, name: basename(dir), config, weightFiles, indexedTensors, tokenizer: readTokenizerFiles(dir, configJson) };
}

function findWeights(dir: string): { weightFiles: string[]; indexedTensors: Set<string> | null } {
  const indexPath = join(dir, 'model.safetensors.index.json');
  const index = readOptionalJsonObject(indexPath, MAX_INDEX_BYTES);
  if (index !== null) {
    const map = index['weight_map'];
    if (!isRecord(map)) throw new HfModelFormatError(indexPath, 'has no "weight_map" object');
    const files = new Set<string>();
    for (const [tensor, file] of Object.entries(map)) {
      // Names only: a hostile index must not send the reader outside the model directory.
      if (typeof file !== 'string' || !file.endsWith('.safetensors') || file !== basename(file) || file.startsWith('.')) {
        throw new HfModelFormatError(indexPath, `weight_map sends ${JSON.stringify(tensor.slice(0, 64))} to ${JSON.stringify(file)}, which is not a .safetensors file name in the model directory`);
      }
      files.add(file);
    }
    if (files.size === 0) throw new HfModelFormatError(indexPath, 'weight_map lists no tensors');
    if (files.size > MAX_WEIGHT_FILES) throw new HfModelFormatError(indexPath, `weight_map names ${files.size} files, more than the limit of ${MAX_WEIGHT_FILES}`);
    return { weightFiles: [...files].sort().map((f) => join(dir, f)), indexedTensors: new Set(Object.keys(map)) };
  }
  const names = readdirSync(dir);
  const shards = names.filter((f) => f.startsWith('model') && f.endsWith('.safetensors')).sort();
  if (shards.length === 0) {
    const hasBin = names.some((f) => f.startsWith('pytorch_model') && f.endsWith('.bin'));
    throw new HfModelFileMissingError(join(dir, 'model.safetensors'), hasBin
      ? 'does not exist: the model ships PyTorch .bin weights, and kiln convert reads safetensors only (re-save the model with safe_serialization=True)'
      : 'does not exist, and the directory has no model*.safetensors weights');
  }
  if (shards.length > MAX_WEIGHT_FILES) throw new HfModelFormatError(dir, `has ${shards.length} weight files, more than the limit of ${MAX_WEIGHT_FILES}`);
  return { weightFiles: shards.map((f) => join(dir, f)), indexedTensors: null };
}

function readTokenizerFiles(dir: string, config: Record<string, unknown>): HfTokenizerFiles {
  const tokenizerJsonPath = join(dir, 'tokenizer.json');
  const rawJson = readOptionalJson(tokenizerJsonPath, MAX_TOKENIZER_JSON_BYTES);
  const tokenizerModel = readOptionalBytes(join(dir, 'tokenizer.model'), MAX_SENTENCEPIECE_BYTES);
  if (rawJson === null && tokenizerModel === null) {
    throw new HfModelFileMissingError(tokenizerJsonPath, 'does not exist, and neither does tokenizer.model');
  }
  const tokenizerConfig = readOptionalJsonObject(join(dir, 'tokenizer_config.json'), MAX_TOKENIZER_JSON_BYTES);
  return {
    tokenizerJson: rawJson === null ? null : checkTokenizerJson(rawJson, tokenizerJsonPath),
    tokenizerModel,
    tokenizerConfig,
    addedTokens: readOptionalJsonObject(join(dir, 'added_tokens.json'), MAX_TOKENIZER_JSON_BYTES),
    config,
    generationConfig: readOptionalJsonObject(join(dir, 'generation_config.json'), MAX_CONFIG_BYTES),
    chatTemplateFile: readChatTemplateFile(dir),
  };
}

/** chat_template.jinja, else chat_template.json's chat_template, as gguf-py reads them. */
function readChatTemplateFile(dir: string): ChatTemplate | null {
  const jinja = readOptionalText(join(dir, 'chat_template.jinja'), MAX_TOKENIZER_JSON_BYTES);
  if (jinja !== null) return jinja;
  const path = join(dir, 'chat_template.json');
  const json = readOptionalJsonObject(path, MAX_TOKENIZER_JSON_BYTES);
  if (json === null || json['chat_template'] === undefined) return null;
  if (!isChatTemplate(json['chat_template'])) throw new HfModelFormatError(path, 'chat_template should be a string or a list of { name, template }');
  return json['chat_template'];
}
