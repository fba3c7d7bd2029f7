#!/usr/bin/env bash
# e2e_runtime_node: Node.js (V8's JIT, and a WebAssembly module with 64 MiB of memory) at 25 % of its footprint under comex run gives its native output.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_runtime_node: node building, sorting and checking objects and filling Wasm memory at 25 % of its native peak RSS"
command -v node >/dev/null || { echo "skip: node is not installed (scripts/deps.sh installs nodejs)"; exit 77; }
# V8 maps its embedded builtins over its code range with MAP_FIXED from a
# file (docs/DECISIONS.md D42): node did not start under comex before that worked
compare node quarter budget -- node "$src/tests/progs/runtimes/objects.js" 300000
finish
