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
# One worker more than cores: part of the suite's time is spent waiting on sshd, Ansible and the nodes'
# agents, which the extra worker fills (tests/conftest.py balances them by work stealing).
.venv/bin/pytest -q -n "$(($(nproc) + 1))" "$@"
