// Lists native sources for binding.gyp (gyp has no globbing): `baseline`, `avx2` or `avx512`.
const { readdirSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const list = (dir) => readdirSync(join(root, dir)).filter((f) => f.endsWith('.cpp')).map((f) => `${dir}/${f}`);
const all = [...list('native'), ...list('native/cpu')];
const avx2 = all.filter((f) => f.endsWith('-avx2.cpp'));
const avx512 = all.filter((f) => f.endsWith('-avx512.cpp'));
const pick = { avx2, avx512, baseline: all.filter((f) => !avx2.includes(f) && !avx512.includes(f)) }[process.argv[2] ?? 'baseline'];
process.stdout.write(pick.join(' '));
