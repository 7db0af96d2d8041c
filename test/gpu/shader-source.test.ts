// The WGSL sources as the WebGPU backend loads them, checked without a GPU: the preprocessor, the
// block layouts emitted for the shaders, and every shader's parameter block and bindings.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BLOCK_LAYOUTS, blockLayoutConstants, WGSL_TYPES } from '../../src/backend/webgpu/block-layouts.js';
import { shaderSource } from '../../src/backend/webgpu/shader-source.js';
import { GGML_TYPES, GgmlType } from '../../src/gguf/ggml-type.js';
import { repoRoot } from '../helpers/paths.js';

const SHADERS = readdirSync(join(repoRoot, 'shaders')).filter((f) => f.endsWith('.wgsl')).map((f) => f.slice(0, -5));
const FLAGS = { SUBGROUPS: false, SG_ONLY: false, F16: false, DOT4: true, KV_F16: false, IS_FLOAT: false, BF16: false };
const BASE = { WG: 64, DTYPE: GgmlType.Q4_K, MAX_HEAD_DIM: 256, ...FLAGS };

describe('WGSL sources', () => {
  it('block layouts agree with the dtype table and are emitted as constants', () => {
    for (const layout of Object.values(BLOCK_LAYOUTS)) expect(layout.BYTES, GGML_TYPES[layout.type].name).toBe(GGML_TYPES[layout.type].typeSize);
    // The fields of each block tile it without overlap up to its size.
    expect(BLOCK_LAYOUTS.Q4_K.QS + 128).toBe(BLOCK_LAYOUTS.Q4_K.BYTES);
    expect(BLOCK_LAYOUTS.Q5_K.QS + 128).toBe(BLOCK_LAYOUTS.Q5_K.BYTES);
    expect(BLOCK_LAYOUTS.Q6_K.D + 2).toBe(BLOCK_LAYOUTS.Q6_K.BYTES);
    expect(BLOCK_LAYOUTS.Q8_0.QS + 32).toBe(BLOCK_LAYOUTS.Q8_0.BYTES);
    expect(BLOCK_LAYOUTS.Q4_0.QS + 16).toBe(BLOCK_LAYOUTS.Q4_0.BYTES);
    const consts = blockLayoutConstants();
    expect(consts).toContain('const Q6_K_D: u32 = 208u;');
    expect(consts).toContain(`const T_Q4_K: u32 = ${GgmlType.Q4_K}u;`);
    expect(Object.keys(WGSL_TYPES).map(Number).every((t) => GGML_TYPES[t as GgmlType].isWeightType)).toBe(true);
  });

  it('every shader has one entry point, a Params uniform at its last binding, and preprocesses for each feature set', () => {
    expect(SHADERS.length).toBeGreaterThanOrEqual(15);
    for (const name of SHADERS) {
      for (const features of [{}, { SUBGROUPS: true }, { F16: true, KV_F16: true }, { DOT4: false, IS_FLOAT: true, BF16: true }]) {
        const s = shaderSource(name, { ...BASE, ...features });
        const last = s.bindings.reduce((a, b) => (b.binding > a.binding ? b : a));
        expect(last.kind, name).toBe('uniform');
        expect(s.params.length, name).toBeGreaterThan(0);
        expect(s.code.match(/@compute/g), name).toHaveLength(1);
        expect(s.code, name).not.toMatch(/^\s*#/m);
        const fns = [...s.code.matchAll(/^fn (\w+)/gm)].map((m) => m[1]);
        expect(new Set(fns).size, `${name}: a function defined twice`).toBe(fns.length);
        // include/fma.wgsl hides its error terms from the compiler behind a zero the host passes.
        if (s.code.includes('fn opaque(')) expect(s.params.map((p) => p.name), `${name}: include/fma.wgsl needs Params.zero`).toContain('zero');
        // `enable` directives must precede every declaration.
        const firstEnable = s.code.search(/^enable /m);
        if (firstEnable >= 0) expect(s.code.slice(0, firstEnable).trim(), name).toBe('');
      }
    }
  });

  it('keeps #if branches by the variant and rejects undefined flags', () => {
    const withSubgroups = shaderSource('rms_norm', { ...BASE, SUBGROUPS: true }).code;
    expect(withSubgroups).toMatch(/^enable subgroups;/);
    expect(withSubgroups).toContain('subgroupAdd');
    const without = shaderSource('rms_norm', BASE).code;
    expect(without).not.toContain('subgroupAdd');
    expect(() => shaderSource('rms_norm', { WG: 64 })).toThrow(/#if SUBGROUPS: the flag is not defined/);
  });
});
