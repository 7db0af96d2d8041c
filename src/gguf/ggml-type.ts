// GGML tensor types as stored in GGUF tensor infos, and the block geometry of each.
// Mirrors native/cpu/type-traits.cpp; a test checks the two tables agree.

export enum GgmlType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
}

export interface GgmlTypeInfo {
  name: string;
  /** Elements per block. */
  blockSize: number;
  /** Bytes per block. */
  typeSize: number;
  /** Whether kiln runs model weights of this type. */
  isWeightType: boolean;
}

export const GGML_TYPES: Record<GgmlType, GgmlTypeInfo> = {
  [GgmlType.F32]: { name: 'f32', blockSize: 1, typeSize: 4, isWeightType: true },
  [GgmlType.F16]: { name: 'f16', blockSize: 1, typeSize: 2, isWeightType: true },
  [GgmlType.Q4_0]: { name: 'q4_0', blockSize: 32, typeSize: 18, isWeightType: true },
  [GgmlType.Q4_1]: { name: 'q4_1', blockSize: 32, typeSize: 20, isWeightType: false },
  [GgmlType.Q5_0]: { name: 'q5_0', blockSize: 32, typeSize: 22, isWeightType: false },
  [GgmlType.Q5_1]: { name: 'q5_1', blockSize: 32, typeSize: 24, isWeightType: false },
  [GgmlType.Q8_0]: { name: 'q8_0', blockSize: 32, typeSize: 34, isWeightType: true },
  [GgmlType.Q8_1]: { name: 'q8_1', blockSize: 32, typeSize: 36, isWeightType: false },
  [GgmlType.Q2_K]: { name: 'q2_K', blockSize: 256, typeSize: 84, isWeightType: false },
  [GgmlType.Q3_K]: { name: 'q3_K', blockSize: 256, typeSize: 110, isWeightType: false },
  [GgmlType.Q4_K]: { name: 'q4_K', blockSize: 256, typeSize: 144, isWeightType: true },
  [GgmlType.Q5_K]: { name: 'q5_K', blockSize: 256, typeSize: 176, isWeightType: true },
  [GgmlType.Q6_K]: { name: 'q6_K', blockSize: 256, typeSize: 210, isWeightType: true },
  [GgmlType.Q8_K]: { name: 'q8_K', blockSize: 256, typeSize: 292, isWeightType: false },
  [GgmlType.BF16]: { name: 'bf16', blockSize: 1, typeSize: 2, isWeightType: true },
};

export function ggmlTypeInfo(type: number): GgmlTypeInfo | undefined {
  return (GGML_TYPES as Record<number, GgmlTypeInfo | undefined>)[type];
}

/** Bytes of a row of `n` elements (n a multiple of the block size). */
export function rowBytes(type: GgmlType, n: number): number {
  const t = GGML_TYPES[type];
  return (n / t.blockSize) * t.typeSize;
}
