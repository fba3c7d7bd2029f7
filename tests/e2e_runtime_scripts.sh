#!/usr/bin/env bash
# e2e_runtime_scripts: Perl and Ruby (Lua 5.4 and LuaJIT by name only: too slow) at 25 % of their footprint under comex run give their native output.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_runtime_scripts: perl and ruby (lua5.4 and luajit with COMEX_TEST_ONLY) building, checking and sorting tables at 25 % of the native peak RSS"
for p in perl ruby lua5.4 luajit; do
  command -v $p >/dev/null || { echo "skip: $p is not installed (scripts/deps.sh installs it)"; exit 77; }
done
r=$src/tests/progs/runtimes
compare perl   quarter budget -- perl "$r/hashes.pl" 150000
compare ruby   quarter budget -- ruby "$r/hashes.rb" 150000
# Lua 5.4 and LuaJIT intern every string in one hash table, so building and
# checking strings is random access over the heap: at 25 % they took 40-105 s
# (lua) and 223-324 s (luajit) on this loaded 2-core VM, too long for make
# test. Run them by name: COMEX_TEST_ONLY="lua luajit".
if [[ " ${COMEX_TEST_ONLY:-} " == *" lua"* ]]; then
  compare lua    quarter budget -- lua5.4 "$r/tables.lua" 150000
  # LuaJIT places its machine code near itself with address hints (P9)
  compare luajit quarter budget -- luajit "$r/tables.lua" 150000
fi
finish
