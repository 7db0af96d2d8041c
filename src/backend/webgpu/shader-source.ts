// Loads shaders/<name>.wgsl for one pipeline variant: resolves `#include "x"` (shaders/include/x.wgsl,
// once each) and `#if NAME` / `#if !NAME` / `#else` / `#endif` on the variant's flags, hoists
// `enable` directives, and prepends the variant's constants and the block layouts. Also reads back
// what the host needs to bind it: each binding's name, number and access, and the Params fields.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { blockLayoutConstants } from './block-layouts.js';

/** Flags (for #if and as bool constants) and u32/f32 constants of one variant. */
export type ShaderDefines = Record<string, boolean | number>;

export type BindingKind = 'uniform' | 'read-only-storage' | 'storage';

export interface ShaderBinding {
  name: string;
  binding: number;
  kind: BindingKind;
}

export interface ShaderSource {
  name: string;
  code: string;
  bindings: ShaderBinding[];
  /** The fields of `struct Params`, in order: each one 4 bytes (u32, i32 or f32). */
  params: Array<{ name: string; type: 'u32' | 'i32' | 'f32' }>;
}

let shaderDir: string | undefined;

/** The repository's (or installed package's) shaders/ folder, from src/ or dist/src/. */
function shadersFolder(): string {
  if (shaderDir) return shaderDir;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'shaders', 'mul_mat.wgsl'))) return (shaderDir = join(dir, 'shaders'));
    dir = dirname(dir);
  }
  throw new Error('kiln: the shaders/ folder was not found next to the package; reinstall kiln');
}

const fileCache = new Map<string, string>();

function readShaderFile(path: string): string {
  let text = fileCache.get(path);
  if (text === undefined) {
    text = readFileSync(path, 'utf8');
    fileCache.set(path, text);
  }
  return text;
}

function preprocess(text: string, file: string, defines: ShaderDefines, included: Set<string>, out: string[]): void {
  // Whether lines are kept at each open #if level.
  const stack: Array<{ keep: boolean }> = [];
  const keeping = () => stack.every((s) => s.keep);
  text.split('\n').forEach((line, n) => {
    const where = `${file}:${n + 1}`;
    const directive = /^\s*#(\w+)\s*(.*?)\s*$/.exec(line);
    if (!directive) {
      if (keeping()) out.push(line);
      return;
    }
    const [, word, arg] = directive;
    if (word === 'if') {
      const negate = arg!.startsWith('!');
      const flag = negate ? arg!.slice(1) : arg!;
      if (typeof defines[flag] !== 'boolean') throw new Error(`${where}: #if ${flag}: the flag is not defined for this variant`);
      stack.push({ keep: (defines[flag] as boolean) !== negate });
    } else if (word === 'else') {
      const top = stack.at(-1);
      if (!top) throw new Error(`${where}: #else without #if`);
      top.keep = !top.keep;
    } else if (word === 'endif') {
      if (!stack.pop()) throw new Error(`${where}: #endif without #if`);
    } else if (word === 'include') {
      if (!keeping()) return;
      const name = /^"([\w-]+)"$/.exec(arg!)?.[1];
      if (!name) throw new Error(`${where}: #include takes a quoted name`);
      if (included.has(name)) return;
      included.add(name);
      const path = join(shadersFolder(), 'include', `${name}.wgsl`);
      preprocess(readShaderFile(path), `include/${name}.wgsl`, defines, included, out);
    } else {
      throw new Error(`${where}: unknown directive #${word}`);
    }
  });
  if (stack.length) throw new Error(`${file}: #if without #endif`);
}

function constant(name: string, value: boolean | number): string {
  if (typeof value === 'boolean') return `const ${name}: bool = ${value};`;
  if (Number.isInteger(value) && value >= 0) return `const ${name}: u32 = ${value}u;`;
  return `const ${name}: f32 = ${value};`;
}

export function shaderSource(name: string, defines: ShaderDefines): ShaderSource {
  const lines: string[] = [];
  preprocess(readShaderFile(join(shadersFolder(), `${name}.wgsl`)), `${name}.wgsl`, defines, new Set(), lines);
  const directives = lines.filter((l) => /^\s*(enable|requires)\b/.test(l));
  const body = lines.filter((l) => !/^\s*(enable|requires)\b/.test(l));
  const consts = Object.entries(defines).map(([k, v]) => constant(k, v));
  const code = [...directives, ...consts, blockLayoutConstants(), ...body].join('\n');

  const bindings: ShaderBinding[] = [];
  for (const m of code.matchAll(/@group\(0\)\s*@binding\((\d+)\)\s*var<(storage|uniform)(?:,\s*(read|read_write))?>\s*(\w+)/g)) {
    const kind: BindingKind = m[2] === 'uniform' ? 'uniform' : m[3] === 'read_write' ? 'storage' : 'read-only-storage';
    bindings.push({ name: m[4]!, binding: Number(m[1]), kind });
  }
  const struct = /struct Params\s*\{([^}]*)\}/.exec(code);
  const params = struct
    ? [...struct[1]!.matchAll(/(\w+)\s*:\s*(u32|i32|f32)/g)].map((m) => ({ name: m[1]!, type: m[2] as 'u32' | 'i32' | 'f32' }))
    : [];
  const last = bindings.reduce((a, b) => (b.binding > a.binding ? b : a), bindings[0]!);
  if (!struct || last.kind !== 'uniform') throw new Error(`${name}.wgsl: parameters belong in a uniform Params at the last binding`);
  return { name, code, bindings, params };
}
