#!/usr/bin/env bash
# The one device entry point: sets up the environment once, then runs the suites named, in order.
#
#   bench/gpu.sh SUITE [ARGS...] [+ SUITE [ARGS...]]...
#
#   conv ARGS          bench/bench_causal_conv1d.py: forward, update and host rows beside causal-conv1d,
#                      fla and torch (peers built once per machine from the carried .peers)
#   conv_bwd ARGS      bench/bench_conv_bwd.py: backward and fwd+bwd (CUDA graphs) beside causal-conv1d, fla, torch
#   matmul ARGS        bench/bench_matmul.py: against cuBLAS (the default config per variant), issue 21 tables
#   cp ARGS            bench/bench_cp_conv.py: context-parallel conv vs the plain op (torchrun on every GPU)
#   host ARGS          bench/bench_causal_conv1d.py --host-only: where the host time of a tiny conv call goes
#   planner ARGS       bench/plan_vs_measure.py: the tile planner's ranking against measurement
#   reliability [quick] bench/reliability/session.sh: ranks on a cold cache, GPU tests, sanitizers, soak
#   sanitize ARGS      bench/reliability/sanitize.py: compute-sanitizer over every kernel
#   tests [ARGS]       python3 -m pytest -q -m gpu ARGS (default: tests/)
#   build [MODULE...]  cold build of each module side by side, then each one's warm load in a new process
#   lab/FILE [ARGS]    an experiment of bench/lab (its README): .cu built with nvcc and run, .py run, .sh sourced
#   cmd COMMAND...     any command in this environment (e.g. ncu ... python3 bench/lab/profile_matmul.py)
#
# Once per call: $OUT (default /tmp/out), the repo on PYTHONPATH, JIT caches under /tmp (kept while the
# machine stays warm), the device line in $OUT/env.txt. Each suite's output goes to $OUT/<n>_<suite>.txt,
# its JSON to $OUT/<n>_<suite>.json (bench/append_results.py adds it to bench/results/).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,/^set /p' "$0" | grep '^#' | cut -c3-; exit 2
fi
export OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR="${AITER_LITE_CACHE_DIR:-/tmp/aiter_lite_cache}"
export AITER_LITE_LOCK_DIR="${AITER_LITE_LOCK_DIR:-/tmp/aiter_lite_locks}"
export TRITON_CACHE_DIR="${TRITON_CACHE_DIR:-/tmp/triton_cache}"
PEER_CACHE="${AITER_LITE_PEER_CACHE:-/tmp/aiter_lite_peers}"
export TORCH_EXTENSIONS_DIR="${TORCH_EXTENSIONS_DIR:-$PEER_CACHE/torch_extensions}"
t0=$SECONDS

{
  echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
    2>/dev/null | head -1 || echo 'no nvidia-smi')"
  python3 -c "import sys, torch; print(f'torch {torch.__version__} (CUDA {torch.version.cuda}), python \
{sys.version.split()[0]}, {torch.cuda.device_count()} GPU(s)')"
  echo "nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'not found'), $(nproc) cores"
} 2>&1 | tee "$OUT/env.txt"

# cold_build MODULE...: each module built from scratch (its cache entry cleared first), side by side;
# the time of each on stdout, its build output in $OUT/build_MODULE.txt.
cold_build() {
  for m in "$@"; do
    ( python3 -m aiter_lite -q clear "$m" > /dev/null 2>&1
      /usr/bin/time -f "$m cold build %e s" python3 -m aiter_lite -q build "$m" --backend cuda ) \
      > "$OUT/build_$m.txt" 2>&1 &
  done
  wait
  for m in "$@"; do tail -n 1 "$OUT/build_$m.txt"; done
}

# warm_load MODULE...: the time get_module takes to load each built module in a new process.
warm_load() {
  for m in "$@"; do
    python3 -c "import time, torch; torch.cuda.init(); t = time.perf_counter()
from aiter_lite.jit import get_module; get_module('$m', 'cuda')
print('$m warm load: %.1f ms (torch imported first)' % ((time.perf_counter() - t) * 1e3))"
  done
}

# causal-conv1d (with its backward) and fla from .peers, built once per machine (bench/peer_cache.py).
peers() {
  python3 bench/peer_cache.py --peers .peers --cache "$PEER_CACHE" && export PYTHONPATH="$PEER_CACHE/site:$PYTHONPATH"
}

suite() {  # suite N NAME ARGS...
  local n=$1 name=$2; shift 2
  local tag; tag="${n}_$(basename "${name%.*}")"
  echo "== [$n] $name $* (t=$((SECONDS - t0)) s)"
  case "$name" in
    conv) peers; python3 bench/bench_causal_conv1d.py --out "$OUT/$tag.json" "$@" ;;
    conv_bwd) peers; python3 bench/bench_conv_bwd.py --out "$OUT/$tag.json" "$@" ;;
    matmul) python3 bench/bench_matmul.py --out "$OUT/$tag.json" "$@" ;;
    cp) peers; gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
      export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"  # NVLink multicast stays off on the lent machines
      if [ "$gpus" -gt 1 ]; then torchrun --nproc-per-node="$gpus" bench/bench_cp_conv.py "$@"
      else python3 bench/bench_cp_conv.py "$@"; fi ;;
    host) python3 bench/bench_causal_conv1d.py --host-only --out "$OUT/$tag.json" "$@" ;;
    planner) python3 bench/plan_vs_measure.py --out "$OUT/$tag.json" "$@" ;;
    reliability) bash bench/reliability/session.sh "$@" ;;
    sanitize) python3 bench/reliability/sanitize.py "$@" ;;
    tests) python3 -m pytest -q -m gpu -p no:cacheprovider "${@:-tests}" ;;
    build) [ $# -gt 0 ] || set -- module_causal_conv1d module_matmul; cold_build "$@" && warm_load "$@" ;;
    lab/*.cu) nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc/include -o "/tmp/$tag" "bench/$name" && "/tmp/$tag" "$@" ;;
    lab/*.py) peers; python3 "bench/$name" "$@" ;;
    lab/*.sh) ( source "bench/$name" "$@" ) ;;
    cmd) peers > /dev/null 2>&1; "$@" ;;  # the peers on the path, quietly (a lab script may use them)
    *) echo "unknown suite '$name' (bench/gpu.sh --help lists them)"; false ;;
  esac 2>&1 | tee "$OUT/$tag.txt"
  local rc=${PIPESTATUS[0]}
  echo "== [$n] $name: rc $rc (t=$((SECONDS - t0)) s)"
  return "$rc"
}

status=0 n=0 args=()
next() { if [ ${#args[@]} -gt 0 ]; then n=$((n + 1)); suite "$n" "${args[@]}" || status=1; args=(); fi; }
for a in "$@"; do if [ "$a" = + ]; then next; else args+=("$a"); fi; done
next
# A device call brings back at most 8 files from $OUT: past that, all but env.txt and the suites' JSON
# go into $OUT/logs.tgz.
if [ "$(find "$OUT" -type f | wc -l)" -gt 8 ]; then
  (cd "$OUT" && find . -type f ! -name env.txt ! -name '[0-9]*_*.json' ! -name logs.tgz -print0 \
    | tar czf logs.tgz --null -T - --remove-files)
  echo "(over 8 files in \$OUT: the logs are in \$OUT/logs.tgz)"
fi
exit "$status"
