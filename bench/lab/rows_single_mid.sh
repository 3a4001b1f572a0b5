#!/bin/bash
# Session 25 lab variant of a tree at $1 (sed): the rows backward's one-vector kernels without the chunk loop (one tile
# a warp, as before session 25), and aligned rows take the two-vector loop only from 2^22 vectors (about 4 waves of
# 16384 chunks of 4 tiles), the one-vector single-tile kernel below that. Prints the count of edits made (4).
f=$1/csrc/kernels/causal_conv1d_bwd_rows.cu
n=0
grep -q "  static constexpr bool kLoop = !kShifted_;" "$f" && n=$((n + 1))
sed -i 's/  static constexpr bool kLoop = !kShifted_;/  static constexpr bool kLoop = !kShifted_ \&\& kVecs_ >= 2;/' "$f"
grep -q "rows_chunking(p.batch \* p.dim, tiles_per_row, kShifted);" "$f" && n=$((n + 1))
sed -i 's/rows_chunking(p.batch \* p.dim, tiles_per_row, kShifted);/rows_chunking(p.batch * p.dim, tiles_per_row, kShifted || kVecs < 2);/' "$f"
grep -q "int64_t{plan.vecs_per_lane} \* kWarpSize), plan.shifted)" "$f" && n=$((n + 1))
sed -i 's/int64_t{plan.vecs_per_lane} \* kWarpSize), plan.shifted)/int64_t{plan.vecs_per_lane} * kWarpSize), plan.shifted || plan.vecs_per_lane < 2)/' "$f"
grep -q "    if (large && efficiency(false, kRowsLargeVecs \* kWarpSize) >= 0.75) plan.vecs_per_lane = kRowsLargeVecs;" "$f" && n=$((n + 1))
sed -i 's/    if (large && efficiency(false, kRowsLargeVecs \* kWarpSize) >= 0.75) plan.vecs_per_lane = kRowsLargeVecs;/    if (large \&\& B * D * L \/ n_elts >= (int64_t{1} << 22) \&\& efficiency(false, kRowsLargeVecs * kWarpSize) >= 0.75) plan.vecs_per_lane = kRowsLargeVecs;/' "$f"
echo "$n edits"
