#!/usr/bin/env bash
# `make demo`: profiles the bundled example app (examples/shop, a Rack app whose quotes leave
# a price watcher subscribed forever) with Memprof.report and prints the report, the leaking
# line on top. Run from a built checkout: the gem loads from lib/.
set -euo pipefail
cd "$(dirname "$0")/.."
exec ruby -I lib examples/profile_shop.rb "$@"
