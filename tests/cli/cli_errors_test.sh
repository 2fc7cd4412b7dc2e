#!/bin/sh
# memprof's front end: usage errors are one "memprof: ..." line on stderr with exit status 1;
# --help and --version succeed. Usage: cli_errors_test.sh PATH/TO/memprof
set -u
memprof=$1
failures=0

expect() {  # description, expected status, expected stderr ("" = empty), command...
  what=$1 status=$2 stderr=$3; shift 3
  err=$("$@" 2>&1 >/dev/null); got=$?
  if [ "$got" != "$status" ] || [ "$err" != "$stderr" ]; then
    echo "FAIL $what: status $got (want $status), stderr [$err] (want [$stderr])"
    failures=$((failures + 1))
  fi
}

expect "unknown command" 1 "memprof: unknown command 'bogus' (see memprof --help)" "$memprof" bogus
expect "no command" 1 "memprof: A subcommand is required (see memprof --help)" "$memprof"
# Builds restricted with MEMPROF_AREAS may leave the symbols command out.
if "$memprof" --help | grep -q "^  symbols "; then
  expect "missing argument" 1 "memprof: TARGET is required (see memprof symbols --help)" "$memprof" symbols
  expect "command help" 0 "" "$memprof" symbols --help
  expect "unknown option" 1 "memprof: symbols has no option --bogus (see memprof symbols --help)" "$memprof" symbols /bin/true --bogus
fi
expect "help" 0 "" "$memprof" --help
# Only the command given sets up its options (main.cc): the list still names every command with
# its summary, and a command's help shows its own options.
if "$memprof" --help | grep -q "^  analyze "; then
  for command in analyze diff heapmap html path retainers show; do
    if ! "$memprof" --help | grep -q "^  $command  *[A-Z]"; then
      echo "FAIL help lists $command with its summary"
      failures=$((failures + 1))
    fi
  done
  if ! "$memprof" analyze --help | grep -q -- "--samples"; then
    echo "FAIL analyze --help shows analyze's options"
    failures=$((failures + 1))
  fi
  # diff takes two or three dumps; its help once said "dumps TEXT x 2" (read: exactly two).
  if ! "$memprof" diff --help | grep -q "^  dumps DUMP \.\.\. REQUIRED  *A B \[C\]: two or three dumps"; then
    echo "FAIL diff --help says it takes two or three dumps"
    failures=$((failures + 1))
  fi
  expect "diff of one dump" 1 "memprof: dumps: At least 2 required but received 1 (see memprof diff --help)" "$memprof" diff a
  expect "diff of stdin twice" 1 "memprof: stdin can be read only once: give at most one of the dumps as -" "$memprof" diff - - </dev/null
  expect "diff of four dumps" 1 "memprof: diff takes two or three dumps: A B [C]" "$memprof" diff a b c d
fi
expect "version" 0 "" "$memprof" --version
# Every command's --help reads as prose: a negated flag once showed "--no-ruby-lines{false}".
for command in $("$memprof" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p'); do
  if "$memprof" "$command" --help | grep -q -E -- '--[a-z-]+\{(true|false)\}'; then
    echo "FAIL $command --help shows a flag's default in braces"
    failures=$((failures + 1))
  fi
done
# Counts are size_t: CLI11 alone read "-1" as 18446744073709551615 (leaks ran "round
# 1/18446744073709551615", stats sent it to the target's Ruby). Each is checked before any
# process is touched (and the PID, above pid_max, names none).
for command in "leaks -p 99999999 --rounds" "leaks -p 99999999 --top" "stats -p 99999999 --top" "top -p 99999999 --once --rows" \
               "report -p 99999999 --top" "native -p 99999999 --top" "analyze x.json --top" "diff a b --top" \
               "html x.json -o x.html --top" "frames /bin/true --top" "trace -p 99999999 -x malloc -s"; do
  name=${command##* }
  if "$memprof" --help | grep -q "^  ${command%% *} "; then
    # shellcheck disable=SC2086
    expect "$command -1" 1 "memprof: $name: Value -1 not in range $([ "$name" = --rounds ] && echo 1 || echo 0) to 100000000 (see memprof ${command%% *} --help)" \
      "$memprof" $command -1
  fi
done

# An empty filter was taken for no filter at all, an empty output path for stdout.
if "$memprof" --help | grep -q "^  analyze "; then
  for option in --class --site --type; do
    expect "analyze $option ''" 1 "memprof: $option: must not be empty (see memprof analyze --help)" "$memprof" analyze x.json "$option" ""
  done
fi
if "$memprof" --help | grep -q "^  native "; then
  for option in --output --pprof --collapsed --flame-graph; do
    expect "native $option ''" 1 "memprof: $option: must not be empty (see memprof native --help)" "$memprof" native "$option" "" -- true
  done
  expect "trace -o ''" 1 "memprof: --output: must not be empty (see memprof trace --help)" "$memprof" trace -x f -o "" -- true
  # fnmatch takes an unclosed '[' literally: such a glob matched nothing, silently.
  expect "trace -x '[a-'" 1 "memprof: -x '[a-': a '[' that no ']' closes (write \\[ for a bracket itself)" "$memprof" trace -x '[a-' -- true
  expect "trace -l 'libc[.so'" 1 "memprof: -l 'libc[.so': a '[' that no ']' closes (write \\[ for a bracket itself)" "$memprof" trace -x malloc -l 'libc[.so' -- true
fi
# An option the command does not have is named (before: "The following arguments were not
# expected: 0 --duration", CLI11's list reversed).
if "$memprof" --help | grep -q "^  leaks "; then
  expect "leaks --duration" 1 "memprof: leaks has no option --duration (see memprof leaks --help)" "$memprof" leaks -p 1 --duration 0
  expect "analyze -x" 1 "memprof: analyze has no option -x (see memprof analyze --help)" "$memprof" analyze x.json -x
  # Before: "Could not convert: --pid = abc".
  expect "leaks --pid abc" 1 "memprof: --pid: 'abc' is not a valid value (see memprof leaks --help)" "$memprof" leaks --pid abc
fi
# Said before any reading: the answer was "no such process" or a reading's error, by timing.
if "$memprof" --help | grep -q "^  top "; then
  expect "top without a terminal" 1 "memprof: top needs a terminal; use --once or --json in scripts" "$memprof" top -p 999999
fi
# Before: "memprof: : Invalid argument" (dump), an error of the output writer (heapmap, html).
if "$memprof" --help | grep -q "^  dump "; then
  expect "dump -o ''" 1 "memprof: --output: must not be empty (see memprof dump --help)" "$memprof" dump -p 1 -o ""
  expect "report --pprof ''" 1 "memprof: --pprof: must not be empty (see memprof report --help)" "$memprof" report -p 1 --pprof ""
fi
if "$memprof" --help | grep -q "^  heapmap "; then
  for command in heapmap html; do
    expect "$command -o ''" 1 "memprof: --output: must not be empty (see memprof $command --help)" "$memprof" $command x.json -o ""
  done
fi

# A process memprof cannot serve, started here and ended by its pid: a non-Ruby one was told to
# "run: memprof attach" (which refuses it), and a zombie was "not running Ruby".
if "$memprof" --help | grep -q "^  stats "; then
  sleep 30 &
  plain=$!
  expect "stats of a non-Ruby process" 1 \
    "memprof: no memprof agent in process $plain, which is not running Ruby: attach, stats, top and dump need Ruby; native and trace work on any process" \
    "$memprof" stats -p "$plain"
  kill "$plain"
  zombie_file=$(mktemp)
  sh -c 'sleep 0.1 & echo $! > "$1"; exec sleep 30' zombie-parent "$zombie_file" &
  parent=$!
  sleep 0.5  # its child has exited and is not reaped: the exec'd sleep never waits
  zombie=$(cat "$zombie_file")
  expect "attach to a zombie" 1 "memprof: process $zombie has ended (a zombie its parent has not reaped yet)" \
    "$memprof" attach -p "$zombie"
  kill "$parent"
  rm -f "$zombie_file"
fi

echo "$failures failed"
[ "$failures" -eq 0 ]
