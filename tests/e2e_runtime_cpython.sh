#!/usr/bin/env bash
# e2e_runtime_cpython: CPython's own regression tests of its process model (test_subprocess, test_posix, test_tempfile) pass under comex run at 25 % of their footprint exactly as without it, test by test (bench/cpython_corpus.py; docs/DECISIONS.md D47, D41, D48).
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_runtime_cpython: test_subprocess, test_posix and test_tempfile under comex run at 25 % match their native outcomes"
py=/usr/bin/python3
"$py" -c 'import test.test_subprocess' 2>/dev/null \
  || { echo "skip: CPython's test suite is not installed (scripts/deps.sh installs libpython3.11-testsuite)"; exit 77; }
"$py" "$src/bench/cpython_corpus.py" --comex "$bin" --python "$py" --modules test_subprocess,test_posix,test_tempfile \
  --timeout 500 --json "$dir/corpus.json" --logs "$dir/logs" || fail cpython "outcomes differ from the native runs (above)"
finish
