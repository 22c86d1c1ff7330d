#!/usr/bin/env bash
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m pip install --no-index --find-links .devdata/wheels dask-cuda > $OUT/pip.txt 2>&1; echo "pip rc $?"; tail -1 $OUT/pip.txt
timeout 330 python3 tools/bench_dask_gpu.py --gib 64 --chunk-mib 1024 --workers 1 --repeat 3 --out $OUT/dask_h200_1worker_tasks.json > $OUT/dask.txt 2>&1; echo "dask rc $?"
grep -v "Warning\|warn" $OUT/dask.txt | tail -6
