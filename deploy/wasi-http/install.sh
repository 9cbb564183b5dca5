#!/usr/bin/env bash
# The tools of the wasi:http component, pinned, built from crates.io into
# target/tools with `cargo install --locked`, only when missing or of
# another version (as benches/gateways.sh installs oha). Prints the binary's
# path on its last line.
#
#   wasm-tools  makes the component of the core module (`wasm-tools component
#               new`) and lists its imports (`wasm-tools component wit`);
#               only its `component` and `validate` features. A few minutes.
#   wasmtime    the runtime: `wasmtime serve`, from wasmtime-cli at the
#               workspace's wasmtime version; only `serve` and what it needs
#               (`run`, Cranelift, the pooling allocator, component-model-async,
#               which serve is written against). About ten minutes on two cores.
#
# usage: bash deploy/wasi-http/install.sh wasm-tools|wasmtime [--background]
#   --background  start the install and return at once (its output in
#                 target/tools/<tool>-install.log), so that it builds while
#                 other work leaves a core free (`make test` starts both
#                 first: the fixture builds are mostly one compiler at a
#                 time). A later call without it waits for that install,
#                 then goes on as usual: a failed one is tried again, in sight.
# One install at a time per tool: target/tools/.<tool>.lock (flock).
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "error: $*" >&2; exit 1; }

case "${1:-}" in
  wasm-tools)
    crate=wasm-tools version=1.263.0 bin=wasm-tools
    features=(--no-default-features --features component,validate,strip)
    ;;
  wasmtime)
    # The workspace's wasmtime, so that `wasmtime serve` runs the same
    # engine as host-sim.
    crate=wasmtime-cli bin=wasmtime
    version=$(sed -n '/^name = "wasmtime"$/{n;s/^version = "\(.*\)"$/\1/p;q}' Cargo.lock)
    [ -n "$version" ] || die "Cargo.lock names no wasmtime version"
    features=(--no-default-features --features run,serve,cranelift,pooling-allocator,parallel-compilation,component-model-async)
    ;;
  *) die "usage: bash deploy/wasi-http/install.sh wasm-tools|wasmtime [--background]" ;;
esac
case "${2:-}" in
  "" | --background) ;;
  *) die "usage: bash deploy/wasi-http/install.sh wasm-tools|wasmtime [--background]" ;;
esac

path=target/tools/bin/$bin
log=target/tools/$bin-install.log
installed() { "$path" --version 2>/dev/null | grep -q "^$bin $version\b"; }
install_tool() {
  local started=$SECONDS
  echo "==> $bin: installing $crate $version into target/tools (cargo install --locked ${features[*]})" >&2
  cargo install --quiet --locked "${features[@]}" "$crate" --version "$version" --root target/tools >&2
  installed || die "$path --version is not $version after the install"
  echo "==> $bin: $version installed in $((SECONDS - started)) s" >&2
}

mkdir -p target/tools
exec 9>"target/tools/.$bin.lock"
if [ "${2:-}" = --background ]; then
  installed && exit 0
  # Under way already: nothing to start.
  flock -n 9 || exit 0
  echo "==> $bin: installing in the background (log: $log)" >&2
  # The subshell keeps the lock (fd 9) until its install ends.
  (install_tool) >"$log" 2>&1 </dev/null &
  exit 0
fi
if ! flock -n 9; then
  echo "==> $bin: waiting for the install under way (log: $log)" >&2
  flock 9
  cat "$log" >&2
fi
installed || install_tool
echo "$path"
