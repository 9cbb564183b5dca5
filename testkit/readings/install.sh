#!/usr/bin/env bash
# The upstream servers of the readings suite (testkit/readings/), each only
# when missing: nginx and Tomcat 10 (with a JDK for javac) from Debian's
# packages with apt-get, Flask and Werkzeug (requirements.txt, pinned) into
# a virtual environment under target/. Express, Fastify and Hono are pinned
# in package.json.
# No service is started: the suite runs its own processes on loopback.
#
# usage: bash testkit/readings/install.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

requirements=testkit/readings/requirements.txt
venv=${READINGS_VENV:-target/readings-venv}
stamp=$venv/.requirements.txt

die() { echo "error: $*" >&2; exit 1; }

packages=()
[ -x /usr/sbin/nginx ] || packages+=(nginx)
[ -f /usr/share/tomcat10/bin/bootstrap.jar ] || packages+=(tomcat10-common)
[ -f /usr/share/tomcat10/lib/servlet-api.jar ] || packages+=(libtomcat10-java)
command -v javac >/dev/null || packages+=(default-jdk-headless)
if [ ${#packages[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
    || die "the readings suite needs ${packages[*]}: install them with your package manager"
  started=$SECONDS
  echo "==> readings: installing ${packages[*]} (apt-get)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null; } \
    || die "apt-get could not install ${packages[*]}"
  echo "==> readings: ${packages[*]} installed in $((SECONDS - started)) s" >&2
fi

if ! { [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$stamp"; }; then
  started=$SECONDS
  echo "==> readings: installing Flask (pinned in $requirements) into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || die "python3 -m venv failed (apt-get install python3-venv)"
  # --only-binary: never build from source.
  "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: -r "$requirements" >&2
  "$venv/bin/python" -c "import flask, werkzeug" || die "Flask did not install into $venv"
  cp "$requirements" "$stamp"
  echo "==> readings: Flask installed in $((SECONDS - started)) s" >&2
fi
