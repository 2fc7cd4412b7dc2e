#!/bin/sh
# gem build + gem install of memprof.gemspec into a temporary GEM_HOME (mkmf compiles the
# extension from the gem's src/, CMake the command-line tool unless MEMPROF_GEM_CLI=0), then the
# installed gem -- not the checkout -- profiles a program and must report its allocations
# exactly; the installed gem holds no build products, and its `memprof` command runs (or, when
# the tool was not built, says why).
# Usage: gem_install_test.sh SOURCE_DIR RUBY GEM
set -eu
root=$1 ruby=$2 gem=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GEM_HOME="$work/home" GEM_PATH="$work/home"
fail() { echo "gem install: $*"; exit 1; }

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
[ "$out" = "$expected" ] || fail "unexpected output:
$out
expected:
$expected"

gem_dir=$(echo "$GEM_HOME"/gems/memprof-*)
for f in LICENSE README.md exe/memprof; do [ -f "$gem_dir/$f" ] || fail "$f is not in the gem"; done
objects=$(find "$GEM_HOME" -name '*.o' | wc -l)
[ "$objects" -eq 0 ] || fail "$objects object files left in the installed gem"
size=$(du -sk "$GEM_HOME" | cut -f1)
[ "$size" -lt 20000 ] || fail "the installed gem takes $size KB"
for so in $(find "$GEM_HOME" -name memprof.so); do
  file "$so" | grep -q ', stripped' || fail "$so is not stripped"
done

if [ "${MEMPROF_GEM_CLI:-1}" = 0 ]; then
  if "$GEM_HOME/bin/memprof" --help >cli.out 2>&1; then fail "memprof ran without a built tool"; fi
  grep -q "was not built when the gem was installed (MEMPROF_GEM_CLI=0 at install)" cli.out ||
    fail "memprof without the tool said: $(cat cli.out)"
else
  "$GEM_HOME/bin/memprof" --help | grep -q "analyze" || fail "memprof --help: $("$GEM_HOME/bin/memprof" --help 2>&1)"
  [ -f "$gem_dir/libexec/libmemprof_agent.so" ] || fail "the agent is not in the gem's libexec/"
  # Attach from the installed gem to a process that never required memprof: its agent, its lib/
  # and its extension are found from the installed layout.
  ruby -e '$k = []; loop { $k << "attached-#{$k.size}"; sleep 0.01 }' &
  target=$!
  # (Still the work directory's removal; and a kill of a target already ended and reaped must
  # not become the script's exit status, which an EXIT trap's last command is.)
  trap 'kill $target 2>/dev/null || true; rm -rf "$work"' EXIT
  "$GEM_HOME/bin/memprof" attach -p "$target" >attach.out 2>&1 || fail "attach from the gem: $(cat attach.out)"
  sleep 0.5
  "$GEM_HOME/bin/memprof" stats -p "$target" >stats.out 2>&1 || fail "stats from the gem: $(cat stats.out)"
  grep -q ":String" stats.out || fail "stats from the gem shows no String: $(cat stats.out)"
  "$GEM_HOME/bin/memprof" detach -p "$target" >/dev/null || fail "detach from the gem"
  kill "$target"
fi
echo "gem install: ok ($size KB installed)"
