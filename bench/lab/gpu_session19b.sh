source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
[ -d /tmp/c_new ] || build_trees "$NEW" "$OLD"
rm -f $L/ab.txt; ab_rounds conv_bwd_seq_idx_ab.py 90
cat $L/ab.txt
