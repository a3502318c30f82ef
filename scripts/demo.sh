#!/usr/bin/env bash
# Set up, then assess a simulated 8x H100 node against the hgx-h100 readiness profile,
# running NCCL and DCGM diagnostics on it, and print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/gpulab assess --target mock:hgx-h100 --profile hgx-h100 --with nccl,dcgm
