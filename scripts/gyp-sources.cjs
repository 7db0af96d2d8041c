// Lists native sources for binding.gyp (gyp has no globbing): `baseline` or `avx2`.
const { readdirSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const list = (dir) => readdirSync(join(root, dir)).filter((f) => f.endsWith('.cpp')).map((f) => `${dir}/${f}`);
const all = [...list('native'), ...list('native/cpu')];
const avx2 = all.filter((f) => f.endsWith('-avx2.cpp'));
process.stdout.write((process.argv[2] === 'avx2' ? avx2 : all.filter((f) => !avx2.includes(f))).join(' '));
