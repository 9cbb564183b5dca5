#!/usr/bin/env bash
# Runs each fuzz target for FUZZ_SECONDS (default 60) with cargo-fuzz
# (libFuzzer, nightly), from a corpus seeded by the attack corpus
# (security/tests/attacks.rs). Prints executions per target; a crash stops
# with its reproducer in fuzz/artifacts/<target>/.
#
# Environment:
#   FUZZ_SECONDS  seconds per target (default 60)
#   FUZZ_TARGETS  the targets to run (default: all seven)
#   FUZZ_JOBS     libFuzzer -fork jobs per target (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-"handler token signed_token config forward policy jwks"}

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "==> installing the nightly toolchain (cargo-fuzz needs it)"
  rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "==> installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

echo "==> seeding fuzz/corpus from the attack corpus"
# --workspace, not -p: the workspace's features, so the test build `make test`
# already made is reused (with -p, cargo resolves another feature set and
# builds wasmtime a second time).
FUZZ_SEED_DIR="$PWD/fuzz/corpus" cargo test --release --quiet --workspace --test attacks \
  -- --ignored write_fuzz_seeds >/dev/null

declare -A max_len=([handler]=20000 [token]=2200 [signed_token]=1600 [config]=4096 [forward]=4096 [policy]=2048 [jwks]=8192)
summary=()
for target in $targets; do
  echo "==> fuzz $target for ${seconds}s"
  log=fuzz/target/$target.log
  mkdir -p fuzz/target "fuzz/corpus/$target"
  status=0
  (cd fuzz && cargo +nightly fuzz run "$target" "corpus/$target" -- \
      -max_total_time="$seconds" -max_len="${max_len[$target]}" -rss_limit_mb=2048 \
      -print_final_stats=1) >"$log" 2>&1 || status=$?
  runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  corpus=$(find "fuzz/corpus/$target" -type f | wc -l)
  if [ "$status" -ne 0 ]; then
    # The panic message and the reproducer, not libFuzzer's byte dump.
    grep -aE "panicked at|invariant|assertion|^Reproduce|cargo fuzz run|deadly signal|leak|timeout|out-of-memory" "$log" \
      | cut -c1-400 | head -20
    echo "error: fuzz target $target failed (log: $log; reproducer in fuzz/artifacts/$target/)" >&2
    exit 1
  fi
  summary+=("$target: $runs executions in ${seconds}s, corpus $corpus inputs, no crash")
done
echo "==> fuzz summary"
printf '  %s\n' "${summary[@]}"
