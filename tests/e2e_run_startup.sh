#!/usr/bin/env bash
# e2e_run_startup: processes under comex run --memnode (TCP) that stay within their budget load neither UCX nor OpenSSL and open no connection of their own; nor does one with the embedded memnode; option encrypt loads OpenSSL and option shm the UCX plugin (docs/DECISIONS.md D80).
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_run_startup: libraries a managed process loads, and the connections 20 short processes open"
memnode_start || finish
tcp=("$bin" run --memnode "127.0.0.1:$mn_port" --token-file "$dir/token")

# maps NAME COMEX-RUN...: the mappings of a cat run under comex run, in $dir/NAME.maps
maps() {
  local name=$1; shift
  if ! "$@" -- cat /proc/self/maps >"$dir/$name.maps" 2>"$dir/$name.err"; then
    fail "$name" "comex run failed: $(tail -n 2 "$dir/$name.err")"; return 1
  fi
  grep -q 'libcomex-rt\.so' "$dir/$name.maps" || { fail "$name" "the runtime is not loaded"; return 1; }
}
loaded() { grep -o "$2[^ ]*" "$dir/$1.maps" | sort -u | tr '\n' ' '; }

if maps tcp "${tcp[@]}"; then
  libs=$(loaded tcp 'lib\(comex-ucx\|ucp\|ucs\|uct\|crypto\)')
  [ -z "$libs" ] && echo "ok: tcp: neither UCX nor OpenSSL loaded" || fail tcp "loaded $libs"
fi
if maps encrypt "${tcp[@]}" --encrypt; then
  [ -n "$(loaded encrypt libcrypto)" ] && [ -z "$(loaded encrypt 'lib\(comex-ucx\|ucp\)')" ] \
    && echo "ok: encrypt: $(loaded encrypt libcrypto)" || fail encrypt "libcrypto not loaded, or UCX loaded: $(loaded encrypt 'lib[a-z-]*\.so')"
fi
if maps embedded "$bin" run; then
  libs=$(loaded embedded 'lib\(comex-ucx\|ucp\|ucs\|uct\|crypto\)')
  [ -z "$libs" ] && echo "ok: embedded: neither UCX nor OpenSSL loaded" || fail embedded "loaded $libs"
fi
if maps shm "$bin" run --shm true; then
  [ -n "$(loaded shm libcomex-ucx)" ] && [ -n "$(loaded shm libucp)" ] \
    && echo "ok: shm: $(loaded shm 'lib\(comex-ucx\|ucp\)')" || fail shm "the UCX plugin is not loaded"
fi

# 20 short processes and a shell: one connection, the launcher's check
before=$(grep -c ': connected$' "$dir/memnode.err")
if "${tcp[@]}" -- sh -c 'for i in $(seq 20); do /bin/true; done; echo done' >"$dir/loop.out" 2>"$dir/loop.err" \
   && grep -qx done "$dir/loop.out"; then
  after=$(grep -c ': connected$' "$dir/memnode.err")
  [ $((after - before)) -eq 1 ] && echo "ok: loop: 1 connection for 21 processes" \
    || fail loop "$((after - before)) connections for 21 processes that never evicted (want 1: the launcher's)"
else
  fail loop "comex run failed: $(tail -n 2 "$dir/loop.err")"
fi
finish
