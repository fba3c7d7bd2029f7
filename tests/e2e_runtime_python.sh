#!/usr/bin/env bash
# e2e_runtime_python: CPython with numpy (Debian's python3-numpy) at 25 % of its footprint under comex run gives its native output.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_runtime_python: numpy arrays sorted, cumulated and indexed, and a dict of objects, at 25 % of the native peak RSS"
py=/usr/bin/python3 # Debian's interpreter: python3-numpy is installed for it
"$py" -c "import numpy" 2>/dev/null || { echo "skip: $py cannot import numpy (scripts/deps.sh installs python3-numpy)"; exit 77; }
OPENBLAS_NUM_THREADS=1 compare numpy quarter budget -- "$py" "$src/tests/progs/runtimes/arrays.py" 64
finish
