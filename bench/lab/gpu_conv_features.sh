#!/bin/bash
# One device call for the forward with states and packed sequences: build, check, time, then
# compute-sanitizer memcheck and racecheck on a quick sweep. Run from the repository root.
set -o pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
nvidia-smi -L; nvcc --version | tail -1; date -u
timeout ${PROBE_S:-190} python bench/lab/probe_conv_features.py "$@" 2>&1 | tee $OUT/probe.log
for tool in memcheck racecheck; do
  timeout ${SAN_S:-45} compute-sanitizer --tool $tool \
    python bench/lab/probe_conv_features.py --quick --no-time 2>&1 | tail -4 | tee $OUT/$tool.log
done
