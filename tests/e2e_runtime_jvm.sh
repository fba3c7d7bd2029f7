#!/usr/bin/env bash
# e2e_runtime_jvm: the JVM with G1, Parallel and ZGC at 25 % of its footprint under comex run gives its native output (ZGC's heap is a memfd mapped at several addresses: shared memory, not paged).
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_runtime_jvm: java with G1, Parallel and ZGC building, sorting and checking objects at 25 % of the native peak RSS"
for p in java javac; do
  command -v $p >/dev/null || { echo "skip: $p is not installed (scripts/deps.sh installs default-jdk-headless)"; exit 77; }
done
javac -d "$dir/classes" "$src/tests/progs/runtimes/Objects.java" || { fail javac "Objects.java does not compile"; finish; }
jvm=(java -Xmx256m -XX:TieredStopAtLevel=1 -cp "$dir/classes")
compare g1       quarter budget -- "${jvm[@]}" -XX:+UseG1GC Objects 250000
compare parallel quarter budget -- "${jvm[@]}" -XX:+UseParallelGC Objects 250000
# ZGC's resident set counts its heap three times (one memfd, three views) and
# that heap is never paged: the budget is a quarter of the rest, about
compare zgc      32M     budget -- "${jvm[@]}" -XX:+UseZGC Objects 250000
finish
