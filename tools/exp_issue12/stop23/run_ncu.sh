set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
NCU=/usr/local/cuda/bin/ncu
PYTHONPATH=. timeout 400 $NCU --clock-control none -k regex:"filter_pipelined|DeviceSelectSweep" \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy \
  python3 tools/exp_issue12/stop23/ncu_filter.py > $OUT/ncu_filter.txt 2>&1
echo "ncu rc=$?"
grep -E "filter_pipelined|DeviceSelectSweep|Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|No Eligible|Achieved Occupancy|Warp Cycles Per Issued|Stall|One or More Eligible" $OUT/ncu_filter.txt | head -120
