#!/bin/bash
# killed_rank.sh WORKER: two ranks started by hand (no launcher to stop the survivor), rank 1
# killed after 5 steps. Rank 0 must end, within NDG_DIST_TIMEOUT plus start-up, with the
# communicator's error naming its rank and the collective that did not finish. 77 (skip) with
# fewer than 2 GPUs.
set -u
worker=$1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + RANDOM % 20000)) WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 NDG_DIST_TIMEOUT=15
start=$(date +%s)
RANK=1 LOCAL_RANK=1 "$worker" --mode die > /dev/null 2>&1 &
other=$!
RANK=0 LOCAL_RANK=0 timeout 120 "$worker" --mode die > "$log" 2>&1
rc=$?
wait $other
seconds=$(( $(date +%s) - start ))
cat "$log"
[ $rc -eq 77 ] && exit 77
echo "rank 0 ended with status $rc after $seconds s"
[ $rc -eq 3 ] || { echo "FAILED: expected status 3 (mx::DeviceError caught)"; exit 1; }
grep -q "rank 0 of 2" "$log" && grep -q "did not finish within 15 s" "$log" ||
  { echo "FAILED: the error does not name the rank and the collective"; exit 1; }
[ $seconds -lt 90 ] || { echo "FAILED: took $seconds s"; exit 1; }
