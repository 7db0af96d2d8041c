#!/usr/bin/env bash
# Builds the addon with the CUDA kernels running on the CPU (x86-64 Linux, g++): every .cu file
# is translated to C++ (translate.mjs) and linked with emu-runtime.cpp in place of the CUDA
# runtime. The CUDA tests then run without a GPU:
#   bash native/cuda/emulation/build.sh
#   KILN_ADDON=build-cuda-emu/kiln.node npx vitest run test/gpu/cuda-
# It checks the kernels' indexing, launch configurations, shared-memory use, the plan's graph
# capture and replay, and the numbers (with the CPU's math functions and summation in the
# kernels' own order); not speed, races between blocks, or the GPU's exp and sin.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/native/cuda/emulation"
out="$root/build-cuda-emu"
mkdir -p "$out/obj"
rm -rf "$out/gen"
node "$here/translate.mjs" "$root/native/cuda" "$out/gen"
cuda_include="${CUDA_HOME:-/usr/local/cuda}/include"
[ -f "$cuda_include/cuda_runtime.h" ] || { echo "no CUDA headers in $cuda_include (set CUDA_HOME)"; exit 1; }
flags=(-std=c++17 -O2 -fPIC -DNAPI_VERSION=8 -DNODE_ADDON_API_DISABLE_DEPRECATED -DNAPI_CPP_EXCEPTIONS -DKILN_CUDA=1
  -I"$root/node_modules/node-addon-api" -I"$(cd "$root" && node -p 'require("node-api-headers").include_dir')"
  -I"$cuda_include" -I"$root/native" -I"$here")
objects=()
compile() {  # source [extra flags...]: compiles when the source or the emulator changed
  local src=$1 obj="$out/obj/$(echo "${1#"$root"/}" | tr '/' '_').o"
  shift
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$here/emu.h" -nt "$obj" ]; then
    g++ "${flags[@]}" "$@" -c "$src" -o "$obj"
  fi
  objects+=("$obj")
}
for f in "$root"/native/*.cpp "$root"/native/cpu/*.cpp; do
  case $f in
    *-avx2.cpp) compile "$f" -mavx2 -mfma -mf16c ;;
    # -O3 as CMakeLists.txt builds them: some intrinsics need the lane indices it unrolls to constants.
    *-avx512.cpp) compile "$f" -O3 -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni -Wno-maybe-uninitialized ;;
    *) compile "$f" ;;
  esac
done
for f in "$root"/native/cuda/*.cpp; do compile "$f"; done
for f in "$out"/gen/*.cpp; do compile "$f" -iquote "$root/native/cuda"; done
compile "$here/emu-runtime.cpp"
g++ -shared -o "$out/kiln.node" "${objects[@]}" -lpthread
# Node supplies the napi_* symbols when the addon loads; a CUDA function the emulation lacks would
# only fail then, so name it now.
missing=$(nm -u --format=just-symbols "$out/kiln.node" | grep '^cuda' || true)
[ -z "$missing" ] || { echo "the emulation lacks: $missing"; exit 1; }
echo "built $out/kiln.node"
