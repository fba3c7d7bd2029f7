#!/usr/bin/env bash
# make install into a DESTDIR: binary, runtime, man pages (generated from the options table, clean under groff) and systemd units (hardened, passing systemd-analyze verify when present); the installed comex runs a program with the output of its native run.
set -u
build=${COMEX_BUILD:?}; bin=${COMEX_BIN:?}; src=${COMEX_SRC:?}
if grep -q "COMEX_SANITIZE:BOOL=ON" "$build/CMakeCache.txt"; then
  echo "skip: the release build installs (the sanitizer build has no runtime library)"; exit 77
fi
dir=$(mktemp -d /tmp/comex-e2e-install.XXXXXX); trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
sysconf=$(sed -n 's/^CMAKE_INSTALL_SYSCONFDIR:PATH=//p' "$build/CMakeCache.txt")
case "$sysconf" in /*) ;; *) sysconf=$prefix/$sysconf ;; esac
[ "$prefix" = /usr ] && sysconf=/etc  # GNUInstallDirs' rule for /usr
root=$dir/root
DESTDIR=$root cmake --install "$build" >"$dir/install.log" 2>&1 || { cat "$dir/install.log"; fail "cmake --install"; }
r=$root$prefix
for f in bin/comex lib/comex/libcomex-rt.so lib/comex/libcomex-ucx.so share/man/man1/comex.1 share/man/man1/comex-run.1 \
         share/man/man8/comex-memnode.8 lib/systemd/system/comex-memnode.service \
         lib/systemd/system/comex-exporter.service; do
  [ -f "$r/$f" ] || fail "not installed: $prefix/$f"
done
[ -f "$root$sysconf/comex/memnode.conf" ] || fail "not installed: $sysconf/comex/memnode.conf"

# man pages: what the binary generates from the table, and clean roff
for p in comex.1 comex-run.1 comex-memnode.8; do
  "$bin" help-options --man "${p%.*}" | cmp - "$r/share/man/man${p##*.}/$p" || fail "$p differs from help-options --man"
  if command -v groff >/dev/null; then
    out=$(groff -man -Tutf8 -ww -z "$r/share/man/man${p##*.}/$p" 2>&1)
    [ -z "$out" ] || fail "groff warnings in $p: $out"
  fi
done
grep -q 'metrics\\-listen' "$r/share/man/man8/comex-memnode.8" || fail "comex-memnode(8) lacks --metrics-listen"
grep -q 'local\\-mem' "$r/share/man/man1/comex-run.1" || fail "comex-run(1) lacks --local-mem"
grep -q 'local\\-mem' "$r/share/man/man8/comex-memnode.8" && fail "comex-memnode(8) lists run options"
out=$("$bin" help-options --man nosuch 2>&1) && fail "unknown man page accepted"
grep -q "no man page 'nosuch'" <<<"$out" || fail "unknown man page message: $out"

# units: the settings the operator relies on
u=$r/lib/systemd/system/comex-memnode.service
for want in "EnvironmentFile=$sysconf/comex/memnode.conf" "ExecStart=$prefix/bin/comex memnode" \
            "LimitMEMLOCK=infinity" "NoNewPrivileges=yes" "ProtectSystem=strict"; do
  grep -qx "$want" "$u" || fail "comex-memnode.service lacks $want"
done
grep -q "^ExecStart=$prefix/bin/comex exporter" "$r/lib/systemd/system/comex-exporter.service" \
  || fail "comex-exporter.service ExecStart"
# the example configuration is the memnode's own environment: every key is an option
grep -v '^#' "$root$sysconf/comex/memnode.conf" | grep . | while IFS== read -r k v; do
  name=$(tr 'A-Z_' 'a-z-' <<<"${k#COMEX_}")
  "$bin" help-options | grep -q -- "--$name " || fail "memnode.conf key $k is not an option"
done || exit 1
if command -v systemd-analyze >/dev/null && [ -d /usr/lib/systemd/system ]; then
  # a scratch root holding the install and the distribution's own units
  mkdir -p "$root/usr/lib/systemd" "$root/etc"
  cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
  out=$(systemd-analyze verify --man=no --root="$root" comex-memnode.service comex-exporter.service 2>&1) \
    || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
  echo "ok: systemd-analyze verify"
else
  echo "note: no systemd-analyze; units checked by content only"
fi

# the installed comex finds its installed runtime and runs a program correctly
seq 1 300000 | sort -r >"$dir/in"
sort -n "$dir/in" | md5sum >"$dir/native"
"$r/bin/comex" run --local-mem 16M -- sort -n "$dir/in" 2>"$dir/run.log" | md5sum >"$dir/comex" \
  || { cat "$dir/run.log"; fail "installed comex run"; }
cmp "$dir/native" "$dir/comex" || fail "output under the installed comex differs"
echo "ok: installed under $prefix, units and man pages checked"
