#!/usr/bin/env bash
# Record the real-program benchmark traces: the four programs in
# bench/programs/ (see bench/README.md) run under QEMU user mode with
# Tessera's plugin, data accesses only, each trace starting in the program's
# kernel phase (after initialisation / graph construction) and holding
# 20,000,000 data accesses.
#
#   scripts/record-bench-traces.sh [--force] [OUT_DIR]
#   scripts/record-bench-traces.sh --measure-init [OUT_DIR]
#
# OUT_DIR defaults to ${TESSERA_CACHE_DIR:-$HOME/.cache/tessera}/bench-traces;
# the programs are compiled into OUT_DIR/bin and the traces written as
# OUT_DIR/<name>.tess.  An existing trace is kept unless --force is given.
# --measure-init records each program with its kernel count set to 0
# (initialisation only) into a temporary file and prints the number of data
# accesses, to re-check the --skip values below after a compiler or QEMU
# change; nothing is kept.
#
# Needs tessera (pip install .), gcc and qemu-x86_64
# (bash scripts/install-system-deps.sh installs the last two).  The first
# --backend qemu run builds Tessera's QEMU plugin (~10 s, see docs/recording.md).
#
# Choosing --skip.  Each program takes its kernel count as its last argument
# and with 0 only initialises (no kernel and no checksum pass), so recording
# that run counts the initialisation's data accesses ("--measure-init").
# Measured 2026 with gcc 12.2.0 (Debian 12.2.0-14+deb12u1), qemu-x86_64 7.2.22
# (Debian 1:7.2+dfsg-7+deb12u18+b3), --no-ifetch:
#
#   program   init-only run          kernel (measured with a short kernel)          --skip     window
#   gups      134,254,988 accesses   2 accesses per update (load + store of one      150,000,000  updates ~7.9 M to ~17.9 M
#             (2^27 stores + ~37 k     word); the default 2^26 updates are          (+15.7 M)    of 67.1 M
#             start-up/exit)           134.2 M accesses
#   pagerank  328,513,062            40,392,930 accesses per iteration (3.1 M       340,000,000  iteration 1, pull loop,
#                                      contrib loop, then the pull loop); 10        (+11.5 M)    8.3 M to 28.3 M of its
#                                      iterations = 404 M                                        37.2 M
#   bfs       411,215,958            76,229,345 accesses per source (1.0 M           420,000,000  source 1, traversal,
#                                      parent reset, ~73.5 M traversal, 1.7 M       (+8.8 M)     ~7.7 M to ~27.7 M
#                                      checksum pass); 4 sources = 305 M
#   xsbench   397,990,075            ~460 accesses per lookup (4,599,656 for 10 k    410,000,000  lookups ~26 k to ~69 k
#                                      lookups); 1 M lookups = 460 M                (+12.0 M)    of 1 M
#
# So every trace starts well past the initialisation and ends well inside
# the kernel (for pagerank and bfs inside the first iteration / search).
set -euo pipefail

MAX_ACCESSES=20000000

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -n '/^#   scripts/p' | sed 's/^# *//'
}

force=0
measure=0
out=""
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --measure-init) measure=1 ;;
    -h|--help) echo "usage:"; usage; exit 0 ;;
    -*) echo "record-bench-traces: unknown option $arg" >&2; usage >&2; exit 2 ;;
    *)
      if [ -n "$out" ]; then
        echo "record-bench-traces: more than one output directory" >&2
        exit 2
      fi
      out=$arg
      ;;
  esac
done
out=${out:-${TESSERA_CACHE_DIR:-$HOME/.cache/tessera}/bench-traces}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src="$here/../bench/programs"

for tool in tessera gcc qemu-x86_64; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "record-bench-traces: $tool not found (tessera: pip install .; gcc, qemu-x86_64: bash scripts/install-system-deps.sh)" >&2
    exit 1
  fi
done

mkdir -p "$out/bin"
out=$(cd "$out" && pwd)
bin="$out/bin"

# name | --skip | program arguments (the defaults, spelled out; the last one
# is the kernel count)
traces=(
  "gups     150000000 27 67108864"
  "pagerank 340000000 20 16 10"
  "bfs      420000000 20 16 4"
  "xsbench  410000000 68 11303 1000000"
)

for t in "${traces[@]}"; do
  read -r name _ <<<"$t"
  gcc -O2 -std=c99 -Wall -o "$bin/$name" "$src/$name.c" -lm
done
echo "record-bench-traces: compiled ${#traces[@]} programs into $bin"

# info FILE KEY: one value of `tessera trace info` (its table form).
info() {
  tessera trace info "$1" | awk -v k="$2" '$1 == k { $1 = ""; sub(/^ +/, ""); print; exit }'
}

if [ "$measure" -eq 1 ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for t in "${traces[@]}"; do
    read -r name skip args <<<"$t"
    read -r -a argv <<<"$args"
    argv[${#argv[@]}-1]=0
    (cd "$bin" && tessera trace record -q --backend qemu --no-ifetch \
      -o "$tmp/$name.tess" -- "./$name" "${argv[@]}" >/dev/null)
    printf '%-8s init-only run (%s): %s data accesses; --skip %s\n' \
      "$name" "${argv[*]}" "$(info "$tmp/$name.tess" records)" "$skip"
    rm -f "$tmp/$name.tess"
  done
  exit 0
fi

for t in "${traces[@]}"; do
  read -r name skip args <<<"$t"
  read -r -a argv <<<"$args"
  trace="$out/$name.tess"
  took="exists, kept"
  if [ -e "$trace" ] && [ "$force" -eq 0 ]; then
    :
  else
    echo "record-bench-traces: recording $name: --skip $skip --max-accesses $MAX_ACCESSES -- ./$name ${argv[*]}"
    start=$(date +%s.%N)
    (cd "$bin" && tessera trace record --backend qemu --no-ifetch \
      --skip "$skip" --max-accesses "$MAX_ACCESSES" -o "$trace" -- "./$name" "${argv[@]}")
    end=$(date +%s.%N)
    took=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "recorded in %.1f s", b - a }')
  fi
  bytes=$(stat -c %s "$trace")
  printf '%-8s %s: %s records, %s instructions, %s pages (4 KiB), footprint %s, %s MB; %s\n' \
    "$name" "$trace" "$(info "$trace" records)" "$(info "$trace" instructions)" \
    "$(info "$trace" pages_4k)" "$(info "$trace" footprint)" \
    "$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')" "$took"
done
