// Rewrites native/cuda/*.cu into C++ for the CPU emulation: kernel launches (`k<<<grid, block,
// shared, stream>>>(args)`) become emulator calls that capture the arguments by value,
// `__shared__` arrays become statics (one block runs at a time), dynamic shared memory comes from
// the emulator, and <mma.h> gives way to emu.h's WMMA.
// Usage: node translate.mjs SRC_DIR OUT_DIR
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [src, out] = process.argv.slice(2);
mkdirSync(out, { recursive: true });
// A kernel name with template arguments nested at most one level deep.
const launch = /([A-Za-z_][\w:]*(?:<(?:[^<>;()]|<[^<>;()]*>)*>)?)\s*<<<([\s\S]+?)>>>\s*\(([\s\S]*?)\);/g;
for (const file of readdirSync(src).filter((f) => f.endsWith('.cu')).sort()) {
  const text = readFileSync(join(src, file), 'utf8')
    .replace('#include <mma.h>\n', '')
    .replace('extern __shared__ float smem[];', 'float* smem = static_cast<float*>(emu::dynamicShared());')
    .replaceAll('__shared__', 'static')
    .replace(launch, (_, name, config, args) =>
      `emu::launch(${config}, reinterpret_cast<const void*>(&${name}), [=] { ${name}(${args}); });`);
  writeFileSync(join(out, file.replace(/\.cu$/, '.cpp')), '#include "emu.h"\n' + text);
}
