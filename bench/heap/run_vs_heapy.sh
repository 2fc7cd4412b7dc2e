#!/bin/sh
# Side-by-side benchmark of `memprof analyze` against heapy (Debian's ruby-heapy) on heap dumps
# this script generates with real Ruby: two synthetic processes (~1.3M and ~1.9M objects,
# allocation tracing on), the larger one also zstd-compressed, and a Rails 6.1 app booted as in
# development (ActionController, lazy) and as in production (rails/all, eager_load). Prints one
# table row per dump: size, objects, wall time and peak RSS of each tool, throughput, speedup;
# then the heap shapes of make_shape_dump.rb (a 330,000-node chain among small objects, tiny
# arrays and hashes, one 100 MB String) with memprof alone, in MB/s and objects/s; then
# heap_phases (load / graph / dominators / analysis) on the 1.3M-object dump.
#
#   bench/heap/run_vs_heapy.sh [BUILD_DIR] [WORK_DIR]
#
# BUILD_DIR (default: build) holds memprof and bench/heap/heap_phases; WORK_DIR (default:
# /tmp/memprof-bench-heap) receives the dumps (~1.2 GB; kept between runs, delete it yourself).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
work=${2:-/tmp/memprof-bench-heap}
memprof="$build/memprof"
phases="$build/bench/heap/heap_phases"
mkdir -p "$work"

for tool in "$memprof" "$phases"; do
  [ -x "$tool" ] || { echo "run_vs_heapy: $tool not built" >&2; exit 1; }
done
command -v heapy >/dev/null || { echo "run_vs_heapy: heapy missing (apt-get install ruby-heapy)" >&2; exit 1; }

make_dump() {  # name, generator command...
  name=$1; shift
  [ -s "$work/$name" ] || { echo "generating $name ..." >&2; "$@"; }
}
make_dump ruby-1.3M.json ruby "$here/make_dump.rb" "$work/ruby-1.3M.json" 137000
make_dump ruby-1.9M.json ruby "$here/make_dump.rb" "$work/ruby-1.9M.json" 200000
make_dump ruby-1.9M.json.zst zstd -q -3 "$work/ruby-1.9M.json" -o "$work/ruby-1.9M.json.zst"
make_dump rails.json ruby "$here/make_rails_dump.rb" "$work/rails.json" 2000
make_dump rails-production.json ruby "$here/make_rails_dump.rb" "$work/rails-production.json" 2000 --production
for shape in chain tiny bigstring; do
  make_dump "$shape.json" ruby "$here/make_shape_dump.rb" "$shape" "$work/$shape.json"
done

# Runs a command with its output discarded; prints "WALL_SECONDS MAX_RSS_KB CPU_SECONDS".
measure() {
  /usr/bin/time -f "%e %M %U %S" -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || {
    echo "run_vs_heapy: failed: $*" >&2; cat "$work/stderr.txt" >&2; exit 1; }
  awk '{printf "%s %s %.2f\n", $1, $2, $3 + $4}' "$work/time.txt"
}
# Best of three runs (the machine is shared; the best run is the least disturbed).
best_of_3() {
  best=""
  for _ in 1 2 3; do
    r=$(measure "$@")
    if [ -z "$best" ] || [ "$(echo "$r $best" | awk '{print ($1 < $4)}')" = 1 ]; then best=$r; fi
  done
  echo "$best"
}

# "WALL s / CPU s, MB/s, RSS MB" for one tool on one dump.
cell() {
  awk -v t="$1" -v c="$2" -v r="$3" -v mb="$4" 'BEGIN{printf "%.2f / %.2f s %5.0f MB/s %4.0f MB", t, c, mb/t, r/1024}'
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-21s | %7s | %9s | %-31s | %-31s | %-13s |\n' dump "JSON MB" objects "memprof analyze" "heapy read" "speedup"
printf '|%s|%s|%s|%s|%s|%s|\n' "-----------------------" "---------" "-----------" "---------------------------------" "---------------------------------" "---------------"
for name in rails.json rails-production.json ruby-1.3M.json ruby-1.9M.json ruby-1.9M.json.zst; do
  dump="$work/$name"
  # Throughput counts the JSON read: for a compressed dump, the size of the plain one.
  mb=$(du -m --apparent-size "${dump%.zst}" | cut -f1)
  objects=$("$memprof" analyze "$dump" --json --top 1 | sed 's/.*"total":{"count":\([0-9]*\).*/\1/')
  set -- $(best_of_3 "$memprof" analyze "$dump" --json)
  m_time=$1 m_rss=$2 m_cpu=$3
  m_cell=$(cell "$m_time" "$m_cpu" "$m_rss" "$mb")
  if [ "${name%.zst}" = "$name" ]; then
    set -- $(measure heapy read "$dump")
    h_time=$1 h_rss=$2 h_cpu=$3
    h_cell=$(cell "$h_time" "$h_cpu" "$h_rss" "$mb")
    speed=$(awk -v h="$h_time" -v m="$m_time" -v hc="$h_cpu" -v mc="$m_cpu" \
      'BEGIN{printf "%.1fx (cpu %.1fx)", h/m, hc/mc}')
  else
    h_cell="(no compressed input)" speed="-"
  fi
  printf '| %-21s | %7s | %9s | %-31s | %-31s | %-13s |\n' "$name" "$mb" "$objects" "$m_cell" "$h_cell" "$speed"
done
echo "(cells: wall s, CPU s, JSON MB per wall second, peak RSS; memprof: best of 3 runs, heapy: 1 run)"
echo
printf '| %-16s | %7s | %9s | %-33s | %-14s |\n' shape "JSON MB" objects "memprof analyze (best of 3)" "objects/s"
printf '|%s|%s|%s|%s|%s|\n' "------------------" "---------" "-----------" "-----------------------------------" "----------------"
for shape in rails rails-production chain tiny bigstring; do
  dump="$work/$shape.json"
  mb=$(du -m --apparent-size "$dump" | cut -f1)
  objects=$("$memprof" analyze "$dump" --json --top 1 | sed 's/.*"total":{"count":\([0-9]*\).*/\1/')
  set -- $(best_of_3 "$memprof" analyze "$dump" --json)
  rate=$(awk -v o="$objects" -v t="$1" 'BEGIN{printf "%.2fM", o/t/1e6}')
  printf '| %-16s | %7s | %9s | %-33s | %-14s |\n' "$shape" "$mb" "$objects" "$(cell "$1" "$3" "$2" "$mb")" "$rate"
done
echo
echo "heap_phases $work/ruby-1.3M.json:"
"$phases" "$work/ruby-1.3M.json"
