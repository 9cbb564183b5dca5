#!/usr/bin/env bash
# Shoots docs/watching-the-gateway.png, the picture in README.md's
# "Watching the gateway": Prometheus's own graph page over host-sim serve
# and Envoy with the gateway filter under a minute of the demo's kinds of
# request (testkit/metrics/screenshot.mjs). Installs what it needs when
# missing: Debian's prometheus and chromium (apt-get), and playwright-core,
# pinned, into target/tools/screenshot (npm). Needs the fixture modules
# and host-sim (make fixture host). Not part of make test.
#
# usage: bash scripts/screenshot.sh [SECONDS]   (default 75)
set -euo pipefail
cd "$(dirname "$0")/.."
playwright_version=1.65.2
for pkg in prometheus chromium; do
  if ! command -v "$pkg" >/dev/null 2>&1; then
    echo "==> apt-get install $pkg"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null; }
  fi
done
tools=target/tools/screenshot
if [ "$(node -p "require('./$tools/node_modules/playwright-core/package.json').version" 2>/dev/null)" != "$playwright_version" ]; then
  echo "==> npm install playwright-core@$playwright_version into $tools"
  mkdir -p "$tools"
  npm install --prefix "$tools" --no-save --no-audit --no-fund --loglevel=error "playwright-core@$playwright_version"
fi
node testkit/metrics/screenshot.mjs docs/watching-the-gateway.png "${1:-75}"
