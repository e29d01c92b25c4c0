#!/bin/bash
# launcher_threads.sh NDGLUON_RUN: ndgluon-run gives each of 2 ranks OMP_NUM_THREADS = half the
# cores this process may use (at least 1), and leaves a value the user set alone.
set -u
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
want=$((cores / 2))
[ "$want" -ge 1 ] || want=1
got=$(env -u OMP_NUM_THREADS "$1" -n 2 sh -c 'echo "$RANK $OMP_NUM_THREADS"' | sort | tr '\n' ' ')
[ "$got" = "0 $want 1 $want " ] || { echo "FAILED: ranks and threads '$got', want $want each of $cores cores"; exit 1; }
got=$(OMP_NUM_THREADS=3 "$1" -n 2 sh -c 'echo "$RANK $OMP_NUM_THREADS"' | sort | tr '\n' ' ')
[ "$got" = "0 3 1 3 " ] || { echo "FAILED: with OMP_NUM_THREADS=3 the ranks got '$got'"; exit 1; }
echo "ok: $want threads for each of 2 ranks on $cores cores; OMP_NUM_THREADS=3 kept"
