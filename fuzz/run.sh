#!/usr/bin/env bash
# Runs every fuzz harness for SECONDS (default 12) on a copy of its seed corpus; exits 1 if any
# finds a crash, a leak or an input that runs past 10 s again when run alone (its reproducer is
# kept in the output folder).
#   bash fuzz/run.sh BUILD_DIR [SECONDS] [OUT_DIR]
set -uo pipefail
build=${1:?usage: bash fuzz/run.sh BUILD_DIR [SECONDS] [OUT_DIR]}
seconds=${2:-12}
out=${3:-$build/fuzz-out}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
failed=0
for corpus in "$here"/corpus/*/; do
  name=$(basename "$corpus")
  bin="$build/fuzz/fuzz_$name"
  work="$out/$name"
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/findings"
  cp "$corpus"* "$work/corpus/"
  if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -artifact_prefix="$work/findings/" -print_final_stats=1 "$work/corpus" > "$work/log" 2>&1; then
    # A timeout is run again alone: one that passes then was the machine stalling the process (a
    # loaded or preempted host), not an input that hangs. Crashes and leaks always count.
    slow=("$work"/findings/timeout-*)
    if [[ -f ${slow[0]} ]] && "$bin" -timeout=10 -rss_limit_mb=2048 "${slow[@]}" > "$work/rerun.log" 2>&1; then
      echo "fuzz_$name: a unit passed the 10 s limit, but ran in time alone (machine stall; kept in $work/findings/)"
    else
      echo "fuzz_$name: FOUND A PROBLEM (see $work/log and $work/findings/)"
      tail -30 "$work/log"
      failed=1
    fi
  else
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$')
    echo "fuzz_$name: ${runs:-?} inputs in ${seconds} s, no crash"
  fi
done
exit $failed
