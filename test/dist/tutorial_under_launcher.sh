#!/bin/bash
# tutorial_under_launcher.sh NDGLUON_RUN TRAIN_FASHION_MNIST: the tutorial as two processes of a job
# (--dist), one epoch of the MLP on 4096 samples; rank 0 reports. 77 (skip) with fewer than 2 GPUs.
set -u
[ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ] || { echo "skipped: needs 2 GPUs"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
timeout 240 "$1" -n 2 "$2" --dist --model mlp --epochs 1 --subset 4096 --csv "$out/curves.csv" > "$out/log" 2>&1
rc=$?
cat "$out/log"
[ $rc -eq 0 ] || { echo "FAILED: status $rc"; exit 1; }
grep -q "rank 0 of 2 processes (dist_sync)" "$out/log" && grep -Eq "MLP test accuracy after 1 epochs: 0\.[0-9]{4}" "$out/log" &&
  [ -s "$out/curves.csv" ] || { echo "FAILED: no report from rank 0"; exit 1; }
