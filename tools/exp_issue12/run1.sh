#!/usr/bin/env bash
# Call 1: experiments (histogram, filter vs CUB), the issue-10 A/B, call costs, ncu of two kernels.
set -u
OUT=${OUT:?}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd "$(dirname "$0")/../.."
E=.devdata/exp
timeout 150 $E/hist_exp $E/text.bin > $OUT/hist_exp.txt 2>&1; echo "hist_exp rc $?"
for i in 1 2; do
  (cd .devdata/ab_old && PYTHONPATH=$PWD timeout 60 python3 ../exp/ab.py old) 2>&1 | tail -6
  PYTHONPATH=$PWD timeout 60 python3 $E/ab.py new 2>&1 | tail -6
done > $OUT/ab.txt
PYTHONPATH=$PWD timeout 90 python3 $E/ab.py new --calls > $OUT/calls.txt 2>&1; echo "calls rc $?"
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy --section InstructionStats"
if which ncu; then
  timeout 100 ncu --kernel-name-base mangled --kernel-name regex:_Z3k_hILb0ELi0ELb0E --launch-count 1 $S $E/hist_exp $E/text.bin quick >> $OUT/ncu_hist.txt 2>&1; echo "ncu k_h rc $?"
  for k in f0 DeviceSelectSweep; do
    timeout 100 ncu --kernel-name regex:$k --launch-count 1 $S $E/filter_exp >> $OUT/ncu_filter.txt 2>&1; echo "ncu $k rc $?"
  done
fi
cat $OUT/ab.txt
