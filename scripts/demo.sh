#!/usr/bin/env bash
# make demo: build the worker (done by make), then show what it decides.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> demo: dist/gateway.wasm built"
