#!/usr/bin/env bash
# make deb's package (built here with prefix /usr): control fields and library dependencies, conffile, postinst; unpacked into a scratch root, its units pass systemd-analyze verify and its binary, run from that root, runs a program with the output of its native run and creates a token as postinst does.
set -u
build=${COMEX_BUILD:?}; src=${COMEX_SRC:?}
if grep -q "COMEX_SANITIZE:BOOL=ON" "$build/CMakeCache.txt"; then
  echo "skip: packaging is tested from the release build"; exit 77
fi
for t in cpack dpkg-deb dpkg-shlibdeps; do
  command -v $t >/dev/null || { echo "FAIL: $t missing (scripts/deps.sh installs cmake and dpkg-dev)"; exit 1; }
done
dir=$(mktemp -d /tmp/comex-e2e-deb.XXXXXX); trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# the Makefile's deb target, in a scratch build directory
make -s -C "$src" deb DEB_BUILD="$dir/b" >"$dir/deb.log" 2>&1 || { tail -30 "$dir/deb.log"; fail "make deb"; }
deb=$(ls "$dir"/b/comex_*.deb 2>/dev/null | head -1)
[ -f "$deb" ] || fail "no .deb in $dir/b"
dpkg-deb -I "$deb" >"$dir/info" || fail "dpkg-deb -I"
# libmimalloc: declared (the runtime dlopens it); xxhash is compiled in
for dep in libucx0 libmimalloc libc6; do
  grep -q "^ Depends:.*$dep" "$dir/info" || fail "Depends lacks $dep: $(grep Depends "$dir/info")"
done
dpkg-deb -e "$deb" "$dir/control" || fail "dpkg-deb -e"
grep -qx /etc/comex/memnode.conf "$dir/control/conffiles" || fail "memnode.conf is not a conffile"
[ -x "$dir/control/postinst" ] && sh -n "$dir/control/postinst" && sh -n "$dir/control/postrm" || fail "postinst/postrm missing or not sh"
root=$dir/root
dpkg-deb -x "$deb" "$root" || fail "dpkg-deb -x"
for f in usr/bin/comex usr/lib/comex/libcomex-rt.so usr/lib/comex/libcomex-ucx.so usr/share/man/man1/comex.1 usr/share/man/man8/comex-memnode.8 \
         usr/lib/systemd/system/comex-memnode.service usr/lib/systemd/system/comex-exporter.service etc/comex/memnode.conf; do
  [ -f "$root/$f" ] || fail "package lacks /$f"
done
u=$root/usr/lib/systemd/system/comex-memnode.service
grep -qx "EnvironmentFile=/etc/comex/memnode.conf" "$u" || fail "unit EnvironmentFile: $(grep EnvironmentFile "$u")"
grep -qx "ExecStart=/usr/bin/comex memnode" "$u" || fail "unit ExecStart: $(grep ExecStart "$u")"
if command -v systemd-analyze >/dev/null && [ -d /usr/lib/systemd/system ]; then
  mkdir -p "$root/usr/lib/systemd"
  cp -an /usr/lib/systemd/system "$root/usr/lib/systemd/"
  out=$(systemd-analyze verify --man=no --root="$root" comex-memnode.service comex-exporter.service 2>&1) \
    || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
  echo "ok: units verified"
fi
# what postinst does, and a program run by the packaged binary and runtime
"$root/usr/bin/comex" token "$dir/token" >/dev/null && [ "$(stat -c %a "$dir/token")" = 600 ] || fail "token"
seq 1 300000 | sort -r >"$dir/in"
sort -n "$dir/in" | md5sum >"$dir/native"
"$root/usr/bin/comex" run --local-mem 16M -- sort -n "$dir/in" 2>"$dir/run.log" | md5sum >"$dir/comex" \
  || { cat "$dir/run.log"; fail "packaged comex run"; }
cmp "$dir/native" "$dir/comex" || fail "output under the packaged comex differs"
echo "ok: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"
