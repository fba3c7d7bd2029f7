#!/usr/bin/env bash
# e2e_runtime_compiled: Debian's rustc, a Rust program it builds and a C++ program of every operator new/delete form, at 25 % of their footprint under comex run give their native output; Go programs (static, cgo, cgo without section headers) are refused by name.
. "${COMEX_SRC:?}/tests/progs/lib.sh"
echo "e2e_runtime_compiled: rustc -O (assembly to stdout) and a Rust program of boxed records at 25 % of the native peak RSS; three Go builds refused"
# Debian's toolchains by path: a rustup or upstream Go earlier in PATH is not what deps.sh installs
rustc=/usr/bin/rustc go=/usr/bin/go
for p in $rustc $go; do
  [ -x $p ] || { echo "skip: $p is not installed (scripts/deps.sh installs rustc and golang-go)"; exit 77; }
done
r=$src/tests/progs/runtimes
cd "$dir"

# rustc itself reaches libstdc++ only through librustc_driver: it caught
# mimalloc's operator new winning over libstdc++'s (CMakeLists.txt, comex-rt)
compare rustc quarter budget -- $rustc -O --emit=asm -o /dev/stdout "$r/objects.rs"
if $rustc -O -o "$dir/objects" "$r/objects.rs"; then
  compare rust quarter budget -- "$dir/objects" 1500000
else
  fail rust "rustc could not build $r/objects.rs"
fi

# C++ through every form of operator new/delete, which the runtime serves
# itself (no C++ runtime is linked into it: src/rt/interpose_cxx.c), down to
# std::bad_alloc thrown through its frames and the new_handler
if want cxx; then
  if ! cxx=$(command -v clang++ || command -v g++); then
    echo "skip: cxx: no C++ compiler (scripts/deps.sh installs clang)"
  elif $cxx -std=c++17 -O2 -o "$dir/newdelete" "$r/newdelete.cc" &&
       $cxx -std=c++17 -fsized-deallocation -O2 -o "$dir/newreplaced" "$r/newreplaced.cc"; then
    compare cxx quarter budget -- "$dir/newdelete" 100000
    # a program's own operator new and delete receive every other form
    compare cxx-replaced quarter budget -- "$dir/newreplaced" 300000
  else
    fail cxx "$cxx could not build $r/newdelete.cc or newreplaced.cc"
  fi
fi

# Go: refused before it starts, with a message that names Go, never run unmanaged
export GOCACHE=$dir/gocache GOPATH=$dir/gopath GOPROXY=off GO111MODULE=off GOFLAGS=
refused() { # NAME BINARY
  local rc=0
  "$bin" run --local-mem 64M -- "$2" >"$dir/$1.out" 2>"$dir/$1.err" || rc=$?
  if [ $rc -eq 0 ] || ! grep -q "is a Go program" "$dir/$1.err" || [ -s "$dir/$1.out" ]; then
    fail "$1" "not refused as a Go program (exit $rc): $(head -c 300 "$dir/$1.err")"
  else
    echo "ok: $1 refused: $(grep -m1 'is a Go program' "$dir/$1.err")"
  fi
}
if want go; then
  if CGO_ENABLED=0 $go build -o "$dir/go-static" "$r/hello.go" &&
     CGO_ENABLED=1 $go build -o "$dir/go-cgo" "$r/hello_cgo.go"; then
    # the same cgo binary with its section headers gone (as `strip
    # --strip-section-headers` leaves it): only the PT_NOTE "Go" note is left
    python3 - "$dir/go-cgo" "$dir/go-cgo-noshdr" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<Q", b, 0x28, 0)        # e_shoff
struct.pack_into("<HH", b, 0x3c, 0, 0)    # e_shnum, e_shstrndx
open(sys.argv[2], "wb").write(b)
PY
    chmod +x "$dir/go-cgo-noshdr"
    if "$dir/go-cgo-noshdr" | grep -q "hello from cgo 42"; then
      refused go-static "$dir/go-static"
      refused go-cgo "$dir/go-cgo"
      refused go-cgo-noshdr "$dir/go-cgo-noshdr"
    else
      fail go "the cgo binary without section headers does not run natively"
    fi
  else
    fail go "go build failed"
  fi
fi
finish
