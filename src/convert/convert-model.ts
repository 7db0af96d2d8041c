// `kiln convert`: a Hugging Face model directory (config.json, safetensors weights, tokenizer
// files) of the llama / mistral / qwen2 / qwen3 families -> one GGUF file that kiln and llama.cpp
// load. Weights are read from memory mappings and written a chunk at a time, so converting a
// model takes little more memory than one chunk of one tensor.
import { GgufStreamWriter } from '../gguf/stream-writer.js';
import { ConvertOutputError, HfModelFormatError } from './errors.js';
import { buildGgufTokenizer, tokenizerMetadata } from './gguf-tokenizer.js';
import { readModelDir } from './model-dir.js';
import { modelMetadata } from './model-metadata.js';
import { openSafetensors } from './safetensors.js';
import { tensorChunks } from './tensor-data.js';
import { FILE_TYPES, planTensors, type OutputType, type SourceTensor } from './tensor-plan.js';

export type { OutputType } from './tensor-plan.js';

export interface ConvertProgress {
  bytesWritten: number;
  totalBytes: number;
  /** The GGUF name of the tensor being written. */
  tensor: string;
  tensorIndex: number;
  tensorCount: number;
}

export interface ConvertOptions {
  /** Storage type of the weight matrices (default f16); norms and vectors stay F32. */
  type?: OutputType;
  onProgress?: (progress: ConvertProgress) => void;
}

export interface ConvertResult {
  path: string;
  architecture: string;
  type: OutputType;
  tensorCount: number;
  bytes: number;
  /** `preFromRegex`: the pre-tokenizer's hash is not in llama.cpp's table, so its regex named it. */
  tokenizer: { model: string; pre: string; tokens: number; preFromRegex: boolean };
}

export async function convertHfModel(modelDir: string, outPath: string, options: ConvertOptions = {}): Promise<ConvertResult> {
  const type = options.type ?? 'f16';
  const model = readModelDir(modelDir);
  const sources = openWeights(model.weightFiles, model.indexedTensors, model.dir);
  const tokenizer = buildGgufTokenizer(model.tokenizer, model.config);
  const plan = planTensors(model.config, sources, tokenizer.tokens.length, type, model.dir);
  const metadata = [
    ...modelMetadata(model.config, { name: model.name, fileType: FILE_TYPES[type], vocabSize: tokenizer.tokens.length }),
    ...tokenizerMetadata(tokenizer),
  ];

  const writer = await GgufStreamWriter.create(outPath, { metadata, tensors: plan.map(({ name, dims, type: t }) => ({ name, dims, type: t })) })
    .catch((err: unknown) => { throw outputError(outPath, err); });
  const totalBytes = writer.fileSize;
  try {
    for (const [i, tensor] of plan.entries()) {
      for (const chunk of tensorChunks(tensor)) {
        await writer.write(chunk);
        options.onProgress?.({ bytesWritten: writer.bytesWritten, totalBytes, tensor: tensor.name, tensorIndex: i, tensorCount: plan.length });
      }
    }
    await writer.finish();
  } catch (err) {
    await writer.abort();
    throw outputError(outPath, err);
  }
  return {
    path: outPath,
    architecture: model.config.architecture,
    type,
    tensorCount: plan.length,
    bytes: totalBytes,
    tokenizer: { model: tokenizer.model, pre: tokenizer.pre, tokens: tokenizer.tokens.length, preFromRegex: tokenizer.preChoice?.by === 'pattern' },
  };
}

/** File system failures (errno codes) become typed errors; anything else passes through. */
function outputError(path: string, err: unknown): unknown {
  return typeof (err as NodeJS.ErrnoException)?.code === 'string' && (err as NodeJS.ErrnoException).syscall !== undefined ? new ConvertOutputError(path, err) : err;
}

/** Every tensor of every shard by name; the index, when there is one, must list exactly these. */
function openWeights(files: string[], indexed: Set<string> | null, dir: string): Map<string, SourceTensor> {
  const out = new Map<string, SourceTensor>();
  for (const file of files) {
    for (const tensor of openSafetensors(file).tensors) {
      const other = out.get(tensor.name);
      if (other !== undefined) throw new HfModelFormatError(file, `holds the tensor ${tensor.name}, which ${other.file} holds too`);
      out.set(tensor.name, { tensor, file });
    }
  }
  if (indexed !== null) {
    const missing = [...indexed].filter((n) => !out.has(n));
    const extra = [...out.keys()].filter((n) => !indexed.has(n));
    if (missing.length > 0 || extra.length > 0) {
      throw new HfModelFormatError(`${dir}/model.safetensors.index.json`, `does not match the shards: ${missing.length} listed tensors are missing${missing.length ? ` (${missing.slice(0, 3).join(', ')}...)` : ''}, ${extra.length} unlisted tensors are present; the download is incomplete`);
    }
  }
  return out;
}
