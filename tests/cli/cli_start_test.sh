#!/bin/sh
# What memprof loads when it starts: the libraries only some commands need (libdw and what it
# loads, libpng, zlib, zstd, xz) are opened when a command needs them (core/util/runtime_library.h),
# not at every start, where each cost 0.1-0.2 ms. A plain dump is analyzed without any of them;
# a compressed one, or a heap map, opens its own; without it, that command fails in one line.
# Usage: cli_start_test.sh PATH/TO/memprof PLAIN.json COMPRESSED.json.zst GZIPPED.json.gz
set -u
memprof=$1 plain=$2 zstd=$3 gzip=$4
failures=0
optional='lib(z|zstd|lzma|png16|dw|elf|bz2)\.so'

# The optional libraries the command initialized (the dynamic loader's own account).
loaded() {
  LD_DEBUG=libs "$@" 2>&1 >/dev/null | sed -n 's/.*calling init: //p' | grep -E -o "$optional" | sort -u | tr '\n' ' '
}

check() {  # description, expected list of optional libraries loaded, command...
  what=$1 want=$2; shift 2
  got=$(loaded "$@")
  if [ "$got" != "$want" ]; then
    echo "FAIL $what: loaded [$got], want [$want]"
    failures=$((failures + 1))
  fi
}

check "--version" "" "$memprof" --version
check "analyze of a plain dump" "" "$memprof" analyze "$plain"
check "analyze of a zstd dump" "libzstd.so " "$memprof" analyze "$zstd"
check "analyze of a gzip dump" "libz.so " "$memprof" analyze "$gzip"
out=$(mktemp -d)
check "heapmap" "libpng16.so libz.so " "$memprof" heapmap "$plain" -o "$out/map.png"
if [ "$(head -c 4 "$out/map.png" | od -An -c | tr -d ' ')" != "211PNG" ]; then
  echo "FAIL heapmap wrote no PNG"
  failures=$((failures + 1))
fi
rm -rf "$out"

# Without the library a command needs, that command says so in one line; the others still run.
# (A private mount namespace hides libzstd behind an empty file: root only.)
zstd_library=$(ldconfig -p | sed -n 's/^[[:space:]]*libzstd\.so\.1 (libc6,x86-64) => //p' | head -1)
if [ -n "$zstd_library" ] && unshare -m true 2>/dev/null; then
  got=$(unshare -m sh -c 'mount --bind /dev/null "$1" && shift && "$@" 2>&1 >/dev/null; echo "exit $?"' hide \
        "$zstd_library" "$memprof" analyze "$zstd" | tr '\n' ' ')
  want="memprof: $zstd: zstd-compressed, and cannot open libzstd.so.1 ($zstd_library: file too short) exit 1 "
  if [ "$got" != "$want" ]; then
    echo "FAIL zstd dump without libzstd: [$got], want [$want]"
    failures=$((failures + 1))
  fi
  if ! unshare -m sh -c 'mount --bind /dev/null "$1" && shift && "$@"' hide "$zstd_library" \
       "$memprof" analyze "$plain" >/dev/null 2>&1; then
    echo "FAIL plain dump without libzstd"
    failures=$((failures + 1))
  fi
fi

echo "$failures failed"
[ "$failures" -eq 0 ]
