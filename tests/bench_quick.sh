#!/usr/bin/env bash
# bench_quick SCRIPT: bench/SCRIPT.py --quick (tiny sizes, one run, its outputs checked, nothing written to
# bench/results or docs/) passes, so that a bench script that breaks is noticed by `make test`
# (tests/tests.cmake registers one test per bench/*.py, label bench). No timing is asserted.
# Exit 77 (skip) where the script needs what this machine or build lacks.
set -u
name=${1:?usage: bench_quick.sh SCRIPT}
build=${COMEX_BUILD:?}; src=${COMEX_SRC:?}
skip() { echo "skip: $*"; exit 77; }
if grep -q "COMEX_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  skip "the bench scripts run comex run, unavailable in the sanitizer build (LD_PRELOAD of a sanitized runtime)"
fi
py=/usr/bin/python3
[ -x "$py" ] || skip "no $py"
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" != 1 ] \
   && ! [ -r /dev/userfaultfd -a -w /dev/userfaultfd ]; then
  skip "no userfaultfd permission (run as root, or sysctl vm.unprivileged_userfaultfd=1)"
fi
case $name in
  cpython_corpus) "$py" -c 'import test.test_tempfile' 2>/dev/null \
                    || skip "CPython's test suite is not installed (scripts/deps.sh installs libpython3.11-testsuite)" ;;
  distance|placement|shrink|swap_latency|swap_reclaim)
                  [ "$(id -u)" -eq 0 ] || skip "bench/$name.py needs root (network namespaces, cgroups or swap)" ;;
esac
cd "$src/bench"
# SIGTERM first: the scripts then undo what they set up (network namespaces, cgroups, swap devices)
timeout -k 15 170 "$py" "$name.py" --build "$build" --quick
rc=$?
[ $rc -eq 124 ] && echo "FAIL: bench/$name.py --quick hung (170 s)"
[ $rc -eq 0 ] && echo "bench_quick $name: ok"
exit $rc
