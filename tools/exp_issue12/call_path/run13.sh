#!/usr/bin/env bash
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD CUATOMIC_BACKEND=cuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git log -1 --format=%h 2>/dev/null
mkdir -p $OUT/targets
timeout 420 python3 -m cuatomic bench --targets --out $OUT/targets > $OUT/targets/targets.txt 2>&1; echo "targets rc $?"; tail -2 $OUT/targets/targets.txt
