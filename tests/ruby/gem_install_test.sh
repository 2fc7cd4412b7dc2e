#!/bin/sh
# gem build + gem install of memprof.gemspec into a temporary GEM_HOME (mkmf compiles the
# extension from the gem's src/), then the installed gem -- not the checkout -- profiles a
# program and must report its allocations exactly.
# Usage: gem_install_test.sh SOURCE_DIR RUBY GEM
set -eu
root=$1 ruby=$2 gem=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GEM_HOME="$work/home" GEM_PATH="$work/home"

cd "$root"
"$gem" build memprof.gemspec --output "$work/memprof.gem" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$gem" install --local --no-document "$work/memprof.gem" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  cat "$GEM_HOME"/extensions/*/*/memprof-*/mkmf.log 2>/dev/null | tail -40
  exit 1
}

cd "$work"
cat >program.rb <<'RUBY'
require "memprof"
so = $LOADED_FEATURES.grep(/memprof\.so\z/).first
abort "loaded #{so.inspect}, not the installed gem's extension" unless so&.start_with?(ENV["GEM_HOME"])
$kept = []
Memprof.start
5.times { $kept << Object.new }   # line 6
GC.start
Memprof.stats($stdout)
puts Memprof.mechanism
Memprof.stop
RUBY
out=$("$ruby" program.rb)
expected=$(printf '%7d %s:%d:%s\nhooks' 5 program.rb 6 Object)
if [ "$out" != "$expected" ]; then
  printf 'unexpected output:\n%s\nexpected:\n%s\n' "$out" "$expected"
  exit 1
fi
echo "gem install: ok"
