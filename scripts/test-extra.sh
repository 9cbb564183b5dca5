#!/usr/bin/env bash
# The tests that are not cargo tests: each part adds its own runner here.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> no extra test suites yet"
