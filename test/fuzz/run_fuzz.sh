#!/bin/bash
# run_fuzz.sh TARGET SEEDS REGRESSIONS: runs a libFuzzer target for $NDG_FUZZ_SECONDS (60 by
# default) on a scratch copy of its seed corpus, after the inputs of past findings in REGRESSIONS
# (which must all pass). Fails on a crash, a leak, an input slower than 10 s or more than 2 GB of
# memory. Appends "NAME passed failed skipped" to $NDG_TEST_COUNTS when set (.ci/run sums those).
set -uo pipefail
target=$1 seeds=$2 regressions=$3
name=$(basename "$target")
seconds=${NDG_FUZZ_SECONDS:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/findings"
cp -r "$seeds"/. "$work/corpus/"
limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 "-artifact_prefix=$work/findings/")

count() {
  [ -n "${NDG_TEST_COUNTS:-}" ] && echo "$name $1 $2 0" >> "$NDG_TEST_COUNTS"
  return 0
}

status=0
# The regressions first, each input once; then the timed run, which reads the seeds before it mutates.
if compgen -G "$regressions/*" >/dev/null; then
  "$target" "${limits[@]}" "$regressions"/* 2>&1 | tail -n 20 || status=1
fi
if [ $status -eq 0 ]; then
  "$target" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 "$work/corpus" 2>"$work/log" || status=1
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)" "$work/log"
fi
if [ $status -ne 0 ]; then
  tail -n 60 "$work/log" 2>/dev/null
  for finding in "$work"/findings/*; do
    [ -e "$finding" ] || continue
    echo "=== finding $(basename "$finding") (base64; add it to $regressions once fixed):"
    base64 -w 76 "$finding" | head -n 40
  done
  count 0 1
  exit 1
fi
count 1 0
