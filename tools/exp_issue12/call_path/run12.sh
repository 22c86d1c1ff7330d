#!/usr/bin/env bash
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD CUATOMIC_BACKEND=cuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_interop.py tests/test_histogram.py tests/test_sum.py > $OUT/pytest_subset.log 2>&1; echo "subset rc $?"; tail -2 $OUT/pytest_subset.log
timeout 100 python3 .devdata/exp/prof.py > $OUT/prof.txt 2>&1; echo "prof rc $?"; head -16 $OUT/prof.txt
mkdir -p $OUT/targets
timeout 360 python3 -m cuatomic bench --targets --out $OUT/targets > $OUT/targets/targets.txt 2>&1; echo "targets rc $?"; tail -3 $OUT/targets/targets.txt
