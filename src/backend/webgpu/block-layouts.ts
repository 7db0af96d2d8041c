// The GGML block layouts as the WGSL kernels read them: byte offsets of each field inside a block,
// described once here and emitted into every shader as constants (Q8_0_BYTES, Q4_K_QS, ...).
// Mirrors native/common/quant-blocks.h; a test checks the sizes against the dtype table.
import { GgmlType } from '../../gguf/ggml-type.js';

export const BLOCK_LAYOUTS = {
  Q8_0: { type: GgmlType.Q8_0, BYTES: 34, D: 0, QS: 2 },
  Q4_0: { type: GgmlType.Q4_0, BYTES: 18, D: 0, QS: 2 },
  Q4_K: { type: GgmlType.Q4_K, BYTES: 144, D: 0, DMIN: 2, SCALES: 4, QS: 16 },
  Q5_K: { type: GgmlType.Q5_K, BYTES: 176, D: 0, DMIN: 2, SCALES: 4, QH: 16, QS: 48 },
  Q6_K: { type: GgmlType.Q6_K, BYTES: 210, QL: 0, QH: 128, SCALES: 192, D: 208 },
} as const;

/** The weight types the WGSL kernels read, with the id each shader's DTYPE constant compares to. */
export const WGSL_TYPES: Partial<Record<GgmlType, string>> = {
  [GgmlType.F32]: 'T_F32',
  [GgmlType.F16]: 'T_F16',
  [GgmlType.BF16]: 'T_BF16',
  [GgmlType.Q8_0]: 'T_Q8_0',
  [GgmlType.Q4_0]: 'T_Q4_0',
  [GgmlType.Q4_K]: 'T_Q4_K',
  [GgmlType.Q5_K]: 'T_Q5_K',
  [GgmlType.Q6_K]: 'T_Q6_K',
};

/** WGSL constant declarations for the type ids and every block field offset. */
export function blockLayoutConstants(): string {
  const lines: string[] = [];
  for (const [type, name] of Object.entries(WGSL_TYPES)) lines.push(`const ${name}: u32 = ${type}u;`);
  for (const [block, fields] of Object.entries(BLOCK_LAYOUTS)) {
    for (const [field, value] of Object.entries(fields)) {
      if (field !== 'type') lines.push(`const ${block}_${field}: u32 = ${value}u;`);
    }
  }
  return lines.join('\n');
}
