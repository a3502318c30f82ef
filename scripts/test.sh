#!/usr/bin/env bash
# Lint, type-check and test. What CI runs (.ci/run) and what the README tells you to run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
# pytest exits 5 when it collected no test: that must fail CI, and it does (set -e).
.venv/bin/pytest -q -n 2 "$@"
