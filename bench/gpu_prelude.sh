# Sourced by the bench/gpu_*.sh device scripts (run from the repo root): $OUT (default /tmp/out), the
# environment (unbuffered Python, the repo on PYTHONPATH, cache and lock dirs under /tmp), t0 for
# elapsed-time labels, the device line in $OUT/env.txt, cold_build and cold_build_matmul.
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR="${AITER_LITE_CACHE_DIR:-/tmp/aiter_lite_cache}" AITER_LITE_LOCK_DIR=/tmp/aiter_lite_locks
t0=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/env.txt"

# cold_build MODULE FILE: MODULE built from scratch (the cache entry cleared first), the tail of the
# build's output and its time in FILE (and on stdout).
cold_build() {
  python3 -m aiter_lite -q clear "$1" >/dev/null 2>&1
  ( /usr/bin/time -f "$1 cold build %e s" python3 -m aiter_lite -q build "$1" --backend cuda ) \
    2>&1 | tail -3 | tee "$2"
}

# module_matmul built from scratch, its time in $OUT/build.txt.
cold_build_matmul() {
  echo "== cold build of module_matmul"
  cold_build module_matmul "$OUT/build.txt"
}

# cold_build_each MODULE...: each module built from scratch, side by side; the last line of each
# build's output (its time) on stdout, the tail in $OUT/build_MODULE.txt.
cold_build_each() {
  for mod in "$@"; do
    cold_build "$mod" "$OUT/build_$mod.txt" >/dev/null &
  done
  wait
  for mod in "$@"; do tail -n 1 "$OUT/build_$mod.txt"; done
}
