#!/usr/bin/env bash
# make deploy-local: dist/gateway.wasm on workerd, on loopback, until Ctrl-C.
#
# usage: bash deploy/workerd/run.sh [HOST:PORT]     (default 127.0.0.1:8787,
#        or GATEWAY_ADDR). GATEWAY_UPSTREAM_OVERRIDE="FROM=TO[,FROM=TO]" maps
#        the module's upstream base URLs to others (see README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

addr=${1:-${GATEWAY_ADDR:-127.0.0.1:8787}}
workerd=node_modules/.bin/workerd
config=deploy/workerd/config.capnp

die() { echo "error: $*" >&2; exit 1; }
[ -f dist/gateway.wasm ] || die "dist/gateway.wasm is missing: run 'make worker'"
[ -x "$workerd" ] || die "$workerd is missing: run 'make setup' (npm ci)"
[[ "$addr" =~ ^(.+):([0-9]+)$ ]] || die "address '$addr' is not HOST:PORT"
host=${BASH_REMATCH[1]} port=${BASH_REMATCH[2]}
if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
  die "$addr is already in use (pass another HOST:PORT)"
fi

# The `iss` of the one issuer of a config with a single one (config.capnp,
# ISSUER): it names that issuer in the decision lines of a module without a
# label table. A config with several issuers has a label table of its own.
if [ -z "${GATEWAY_ISSUER:-}" ]; then
  issuers=$(sed -n 's/^ *\(issuer\|iss\) *= *"\(.*\)" *$/\2/p' "${GATEWAY_CONFIG:-gateway.toml}" 2>/dev/null || true)
  if [ "$(printf '%s\n' "$issuers" | grep -c .)" = 1 ]; then
    export GATEWAY_ISSUER="$issuers"
  fi
fi

"$workerd" serve "$config" --socket-addr "http=$addr" &
pid=$!
stop() {
  trap - INT TERM
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  echo
  echo "==> workerd stopped"
  exit 0
}
trap stop INT TERM

# Wait (at most 15 s) until workerd accepts connections.
for _ in $(seq 150); do
  kill -0 "$pid" 2>/dev/null || { wait "$pid" || true; die "workerd exited during start-up (see above)"; }
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && break
  sleep 0.1
done
(exec 3<>"/dev/tcp/$host/$port") 2>/dev/null || { kill "$pid"; die "workerd did not listen on $addr within 15 s"; }

# A demo token for the hint below, when host-sim is built (`make host`): it
# signs with the config's first key, the demo key of gateway.toml.
token=""
if [ -x target/release/host-sim ]; then
  token=$(target/release/host-sim token --config "${GATEWAY_CONFIG:-gateway.toml}" --aud orders --sub demo-user --exp-in 3600 2>/dev/null || true)
fi

cat <<MSG
==> the gateway runs on workerd at http://$addr  (Ctrl-C stops it)
    rejected (no token, 401):
      curl -si http://$addr/orders/1
    a demo token for aud "orders" (demo key, valid 1 h; TOKEN until \`make host\`); forwarded to the
    orders upstream, http://127.0.0.1:9101 (502 while nothing listens there):
      curl -si -H 'Authorization: Bearer ${token:-TOKEN}' http://$addr/orders/1
MSG

set +e
wait "$pid"
status=$?
set -e
trap - INT TERM
die "workerd exited with status $status"
