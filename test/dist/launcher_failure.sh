#!/bin/bash
# launcher_failure.sh NDGLUON_RUN WORKER: under ndgluon-run, rank 1 kills itself; the launcher must
# name it, stop rank 0 and exit with 128 + 9. 77 (skip) with fewer than 2 GPUs.
set -u
log=$(mktemp)
trap 'rm -f "$log"' EXIT
timeout 120 "$1" -n 2 --grace 5 "$2" --mode die > "$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 77 ] && exit 77
[ $rc -eq 137 ] || { echo "FAILED: ndgluon-run exited with $rc, not 137"; exit 1; }
grep -q "rank 1 (pid [0-9]*) was killed by signal 9" "$log" ||
  { echo "FAILED: ndgluon-run did not name the failed rank"; exit 1; }
