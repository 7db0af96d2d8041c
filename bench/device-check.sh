#!/usr/bin/env bash
# The CUDA backend's check on a machine with an NVIDIA GPU, in one run (under 8 minutes on an
# H200): builds the addon with CUDA, runs the CUDA tests (every kernel against the TypeScript
# reference, stories260K greedy against llama2.c and the CPU backend, the tiny models against
# llama.cpp's log-probabilities), then `bench cuda` (decode bandwidth and prefill TFLOP/s per
# weight type; TinyLlama-1.1B Q4_0 decode and prefill, device time and end to end). Logs and JSON
# go to $OUT, or ./device-results/.
#
#   bash bench/device-check.sh pack   on the development machine: bundles into .device/ what a bare
#                                     GPU machine lacks (node, the test and runtime dependencies,
#                                     the compiled JS, the shared test models; about 45 MB)
#   bash bench/device-check.sh        on the GPU machine, with .device carried along (or node,
#                                     node_modules, dist/ and ../shared/models already there)
# KILN_CUDA_ARCHS (default 90 there) picks the architectures to build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ "${1:-}" = pack ]; then
  rm -rf .device && mkdir -p .device
  grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >>.git/info/exclude
  npx tsc -p tsconfig.json || echo "tsc reported type errors (above); packing the JavaScript it emitted"
  # The runtime dependencies (less WebGPU's 130 MB of Dawn, imported only on demand, and the build
  # tools) and vitest, each with everything it requires.
  node -e '
    const fs = require("fs"), path = require("path");
    const skip = new Set(["webgpu", "@webgpu/types", "cmake-js"]);
    const roots = [...Object.keys(require("./package.json").dependencies).filter((d) => !skip.has(d)), "vitest"];
    const seen = new Set();
    // As node resolves a package: node_modules/NAME in the folder of the package that requires it, then up.
    const find = (name, from) => {
      for (let d = from; ; d = path.dirname(d)) {
        const dir = path.join(d, "node_modules", name);
        if (fs.existsSync(path.join(dir, "package.json"))) return dir;
        if (d === path.dirname(d)) return null;
      }
    };
    const visit = (name, from) => {
      const dir = find(name, from);
      if (!dir || seen.has(dir)) return;
      seen.add(dir);
      const pj = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
      for (const d of Object.keys({ ...pj.dependencies, ...pj.optionalDependencies, ...pj.peerDependencies })) visit(d, dir);
    };
    for (const r of roots) visit(r, process.cwd());
    fs.writeFileSync(".device/files.txt", [...seen].map((d) => path.relative(process.cwd(), d)).join("\n") + "\ndist\n");
  '
  tar -cf - -T .device/files.txt | xz -T0 -6 >.device/js.tar.xz
  tar -C "$(dirname "$(readlink -f "$(command -v node)")")" -cf - node | xz -T0 -6 >.device/node.tar.xz
  shared="${KILN_SHARED:-$root/../shared}"
  (cd "$shared" && tar -cf - models/stories260K.gguf models/tiny-*.gguf models/reference) | xz -T0 -6 >.device/shared.tar.xz
  du -sh .device/*.tar.xz .device
  exit 0
fi

out="${OUT:-$root/device-results}"
mkdir -p "$out"
exec > >(tee "$out/device-check.log") 2>&1
started=$SECONDS
step() { echo; echo "== $* ($((SECONDS - started)) s)"; }

if [ -d .device ]; then
  step "unpacking .device"
  [ -x .device/bin/node ] || { mkdir -p .device/bin && xz -dc .device/node.tar.xz | tar -C .device/bin -xf -; }
  command -v node >/dev/null || export PATH="$root/.device/bin:$PATH"
  [ -d node_modules/vitest ] && [ -d dist ] || xz -dc .device/js.tar.xz | tar -xf -
  [ -d .device/shared ] || { mkdir -p .device/shared && xz -dc .device/shared.tar.xz | tar -C .device/shared -xf -; }
  export KILN_SHARED="$root/.device/shared"
fi
command -v node >/dev/null || { echo "no node here and no .device bundle: run 'bash bench/device-check.sh pack' first and carry .device"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
node --version

step "building the addon with CUDA (architectures ${KILN_CUDA_ARCHS:-90})"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_CUDA=1 -DKILN_CUDA_ARCHS="${KILN_CUDA_ARCHS:-90}" \
  -DCMAKE_JS_INC="$(node -p 'require("node-api-headers").include_dir')" \
  -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$root/build-device/Release" >"$out/cmake.log"
build_started=$SECONDS
cmake --build build-device -j "$(nproc)" >>"$out/cmake.log"
echo "built in $((SECONDS - build_started)) s"
export KILN_ADDON="$root/build-device/Release/kiln.node"
node -e 'console.log(JSON.stringify(require(process.env.KILN_ADDON).cudaDevices(), null, 1))' | tee "$out/cuda-devices.json"

step "CUDA tests"
set +e
node node_modules/vitest/vitest.mjs run test/gpu/cuda- --reporter=default --reporter=json --outputFile.json="$out/cuda-tests.json"
tests=$?

step "bench cuda"
node --enable-source-maps dist/bench/main.js cuda --models-dir "${KILN_BENCH_MODELS:-/tmp/kiln-bench}" --json "$out/cuda-bench.json"
bench=$?
set -e

step "done"
echo "CUDA tests: $([ $tests -eq 0 ] && echo passed || echo FAILED); bench: $([ $bench -eq 0 ] && echo done || echo FAILED); results in $out"
[ $tests -eq 0 ] && [ $bench -eq 0 ]
