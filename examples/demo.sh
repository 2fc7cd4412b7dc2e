#!/usr/bin/env bash
# `make demo`: the story of memprof attach. The bundled shop app (examples/shop, whose quotes
# leave a price watcher subscribed forever) runs as a server that never required memprof; a
# client sends it traffic; memprof attaches to the running process, shows what it allocates,
# finds the leaking line, dumps its heap, and detaches -- and the server keeps serving.
# Run from a built checkout (build/memprof, or the memprof command named by $MEMPROF).
set -euo pipefail
cd "$(dirname "$0")/.."
memprof=${MEMPROF:-build/memprof}
work=$(mktemp -d)
server_pid= traffic_pid=
cleanup() {
  [ -n "$traffic_pid" ] && kill "$traffic_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

ruby examples/shop/server.rb 0 >"$work/server.out" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q listening "$work/server.out" 2>/dev/null && break; sleep 0.1; done
port=$(awk '/listening on/ {print $3}' "$work/server.out")
echo "shop server: pid $server_pid, http://127.0.0.1:$port/quote?items=tea:2,scone (no memprof in it)"

# Traffic: a steady stream of quotes from another process.
ruby -rnet/http -e '
  carts = ["tea:2,scone", "coffee,bagel:2,cookie:3", "juice,salad", "muffin:4"]
  i = 0
  loop { Net::HTTP.get(URI("http://127.0.0.1:#{ARGV[0]}/quote?items=#{carts[i % 4]}")); i += 1 }
' "$port" &
traffic_pid=$!
sleep 1

step "$memprof" attach -p "$server_pid"
sleep 2
step "$memprof" top -p "$server_pid" --once --rows 8
step "$memprof" leaks -p "$server_pid" --interval 1s --rounds 6 --top 5
step "$memprof" stats -p "$server_pid" --top 5
step "$memprof" dump -p "$server_pid" -o "$work/shop.json"
step "$memprof" analyze "$work/shop.json" --top 5
step "$memprof" detach -p "$server_pid"
step curl -s "http://127.0.0.1:$port/quote?items=tea:2,scone"
echo
echo "The server answered after detach: memprof restored every byte it patched."
