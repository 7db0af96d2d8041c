#!/usr/bin/env bash
# Builds the CPU addon with node-gyp (the fallback for machines without cmake) in a scratch
# folder and loads it, so binding.gyp cannot silently rot.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/native" "$root/binding.gyp" "$root/package.json" "$root/scripts" "$tmp/"
ln -s "$root/node_modules" "$tmp/node_modules"
# Offline: build against the Node headers npm is configured with (or the system's), never a download.
nodedir="$(npm config get nodedir 2>/dev/null || true)"
if [ -z "$nodedir" ] || [ "$nodedir" = "undefined" ] || [ "$nodedir" = "null" ]; then
  nodedir="$(dirname "$(dirname "$(command -v node)")")"
fi
[ -f "$nodedir/include/node/node_api.h" ] || { echo "node-gyp check: no Node headers under $nodedir/include/node"; exit 1; }
(cd "$tmp" && "$root/node_modules/.bin/node-gyp" rebuild --jobs=2 --nodedir="$nodedir" >"$tmp/gyp.log" 2>&1) || { tail -40 "$tmp/gyp.log"; exit 1; }
KILN_ADDON="$tmp/build/Release/kiln.node" node -e "
  const a = require(process.env.KILN_ADDON);
  for (const name of ['cpuFeatures', 'typeTable', 'mapFile', 'quantize', 'dequantize', 'mulMat', 'setKernelLevel', 'Plan'])
    if (typeof a[name] !== 'function') throw new Error('node-gyp build lacks ' + name);
  console.log('node-gyp build: ok, ' + a.typeTable().length + ' types');
"
