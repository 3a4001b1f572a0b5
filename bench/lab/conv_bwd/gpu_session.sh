#!/bin/bash
# One device call: build the backward kernels + test shim, check them, sanitize them, time them against a
# same-bytes copy and causal-conv1d's backward. Run from the worktree root; writes under $OUT.
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 BUILD=/tmp/conv_bwd
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/env.txt"
date -u | tee -a "$OUT/env.txt"
( MAX_JOBS=12 python3 -c "import sys; sys.path.insert(0, '.peers'); from peers import dao_causal_conv1d; print('peer built in %.0f s' % dao_causal_conv1d(with_bwd=True)[1])" ) > "$OUT/peer_build.log" 2>&1 &
peer=$!
python3 bench/lab/conv_bwd/check.py build 2>&1 | tail -3
cp $BUILD/ptxas.txt "$OUT/" 2>/dev/null
python3 bench/lab/conv_bwd/check.py check 2>&1 | tee "$OUT/check.log" | tail -40
wait $peer; tail -2 "$OUT/peer_build.log"
python3 bench/lab/conv_bwd/check.py time ${PEER:---peer} 2>&1 | tee "$OUT/time.log" | tail -40
( timeout ${SAN_TIMEOUT:-100} compute-sanitizer --tool memcheck --error-exitcode 9 python3 bench/lab/conv_bwd/check.py sanitize 2>&1 | tail -3
  timeout ${SAN_TIMEOUT:-100} compute-sanitizer --tool racecheck --error-exitcode 9 python3 bench/lab/conv_bwd/check.py sanitize 2>&1 | tail -3 ) | tee "$OUT/sanitize.log"
