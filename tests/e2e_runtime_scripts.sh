#!/usr/bin/env bash
# e2e_runtime_scripts: Perl, Ruby, Lua 5.4 and LuaJIT at 25 % of their footprint under comex run give their native output.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_runtime_scripts: perl, ruby, lua5.4 and luajit building, checking and sorting tables at 25 % of the native peak RSS"
for p in perl ruby lua5.4 luajit; do
  command -v $p >/dev/null || { echo "skip: $p is not installed (scripts/deps.sh installs it)"; exit 77; }
done
r=$src/tests/progs/runtimes
compare perl   quarter budget -- perl "$r/hashes.pl" 150000
compare ruby   quarter budget -- ruby "$r/hashes.rb" 150000
# Lua 5.4 and LuaJIT intern every string in one hash table, so building and
# checking strings is random access over the heap, and at 25 % they page
# hard: with 150 000 tables (57 and 42 MiB) they took 40-105 s (lua) and
# 223-324 s (luajit) on this 2-core VM, so make test runs them smaller (50 000
# and 30 000 tables, 21 and 14 MiB: 5-14 s and 8-36 s, idle and loaded). COMEX_LUA_N=150000 runs the full size.
compare lua    quarter budget -- lua5.4 "$r/tables.lua" "${COMEX_LUA_N:-50000}"
# LuaJIT places its machine code near itself with address hints (D42)
compare luajit quarter budget -- luajit "$r/tables.lua" "${COMEX_LUA_N:-30000}"
finish
