// The general.* and architecture hyperparameter metadata of a converted model, with the keys and
// value types convert_hf_to_gguf.py writes for the llama, qwen2 and qwen3 families.
import { GgufValueType } from '../gguf/types.js';
import type { GgufWriteValue } from '../gguf/writer.js';
import type { HfModelConfig } from './hf-config.js';

/** ggml's GGML_QNT_VERSION: the block layouts this file's quantized tensors use. */
const QUANTIZATION_VERSION = 2;

export interface ModelMetadataOptions {
  name: string;
  fileType: number;
  /** Tokens in the vocabulary written. */
  vocabSize: number;
}

export function modelMetadata(c: HfModelConfig, opts: ModelMetadataOptions): Array<{ key: string } & GgufWriteValue> {
  const a = c.architecture;
  const u32 = (key: string, value: number) => ({ key, type: GgufValueType.UINT32, value }) as const;
  const f32 = (key: string, value: number) => ({ key, type: GgufValueType.FLOAT32, value }) as const;
  const str = (key: string, value: string) => ({ key, type: GgufValueType.STRING, value }) as const;
  const out: Array<{ key: string } & GgufWriteValue> = [
    str('general.architecture', a),
    str('general.type', 'model'),
    str('general.name', opts.name),
    u32(`${a}.block_count`, c.nLayers),
  ];
  if (c.contextLength !== null) out.push(u32(`${a}.context_length`, c.contextLength));
  out.push(
    u32(`${a}.embedding_length`, c.dim),
    u32(`${a}.feed_forward_length`, c.ffnDim),
    u32(`${a}.attention.head_count`, c.nHeads),
    u32(`${a}.attention.head_count_kv`, c.nKvHeads),
  );
  const s = c.ropeScaling;
  if (s?.type === 'linear') {
    out.push(str(`${a}.rope.scaling.type`, 'linear'), f32(`${a}.rope.scaling.factor`, s.factor));
  } else if (s?.type === 'yarn') {
    out.push(str(`${a}.rope.scaling.type`, 'yarn'), f32(`${a}.rope.scaling.factor`, s.factor), u32(`${a}.rope.scaling.original_context_length`, s.originalContextLength));
    if (s.extFactor !== undefined) out.push(f32(`${a}.rope.scaling.yarn_ext_factor`, s.extFactor));
    if (s.attnFactor !== undefined) out.push(f32(`${a}.rope.scaling.yarn_attn_factor`, s.attnFactor));
    if (s.betaFast !== undefined) out.push(f32(`${a}.rope.scaling.yarn_beta_fast`, s.betaFast));
    if (s.betaSlow !== undefined) out.push(f32(`${a}.rope.scaling.yarn_beta_slow`, s.betaSlow));
  }
  if (c.ropeTheta !== null) out.push(f32(`${a}.rope.freq_base`, c.ropeTheta));
  if (c.rmsEps !== null) out.push(f32(`${a}.attention.layer_norm_rms_epsilon`, c.rmsEps));
  if (c.explicitHeadDim !== null) out.push(u32(`${a}.attention.key_length`, c.explicitHeadDim), u32(`${a}.attention.value_length`, c.explicitHeadDim));
  out.push(u32('general.file_type', opts.fileType));
  if (a === 'llama') out.push(u32(`${a}.vocab_size`, c.vocabSize ?? opts.vocabSize), u32(`${a}.rope.dimension_count`, c.headDim));
  out.push(u32('general.quantization_version', QUANTIZATION_VERSION));
  return out;
}
