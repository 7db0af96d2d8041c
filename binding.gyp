{
  "targets": [
    {
      "target_name": "kiln_avx2",
      "type": "static_library",
      "sources": ["<!@(node scripts/gyp-sources.cjs avx2)"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native"],
      "cflags_cc": ["-std=c++17", "-O3", "-fno-math-errno", "-fPIC", "-fexceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "conditions": [["target_arch=='x64'", { "cflags_cc": ["-mavx2", "-mfma", "-mf16c"] }]],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS"]
    },
    {
      "target_name": "kiln_avx512",
      "type": "static_library",
      "sources": ["<!@(node scripts/gyp-sources.cjs avx512)"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native"],
      "cflags_cc": ["-std=c++17", "-O3", "-fno-math-errno", "-fPIC", "-fexceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "conditions": [["target_arch=='x64'", { "cflags_cc": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512vnni"] }]],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS"]
    },
    {
      "target_name": "kiln",
      "sources": ["<!@(node scripts/gyp-sources.cjs baseline)"],
      "dependencies": ["kiln_avx2", "kiln_avx512"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native"],
      "cflags_cc": ["-std=c++17", "-O3", "-fno-math-errno", "-fexceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS"]
    }
  ]
}
