# workerd configuration of the shim's floor (floor.mjs): the gateway's own
# shim code and module, deciding nothing.
#
#   GATEWAY_FLOOR_LEVEL=1 GATEWAY_UPSTREAM_OVERRIDE=orders=http://127.0.0.1:PORT \
#     node_modules/.bin/workerd serve benches/peers/workerd-floor/config.capnp \
#     --socket-addr http=127.0.0.1:8789
#
# (benches/gateways.sh runs it as workerd-floor0 to workerd-floor2.)
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "floor", worker = .floorWorker),
    (name = "upstreams", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:8789", http = (), service = "floor"),
  ],
);

const floorWorker :Workerd.Worker = (
  modules = [
    (name = "floor.mjs", esModule = embed "floor.mjs"),
    (name = "gateway.mjs", esModule = embed "../../../deploy/workerd/gateway.mjs"),
    (name = "keys.mjs", esModule = embed "../../../deploy/workerd/keys.mjs"),
    (name = "gateway.wasm", wasm = embed "../../../dist/gateway.wasm"),
  ],
  compatibilityDate = "2026-05-01",
  bindings = [
    (name = "FLOOR_LEVEL", fromEnvironment = "GATEWAY_FLOOR_LEVEL"),
    (name = "UPSTREAM_OVERRIDE", fromEnvironment = "GATEWAY_UPSTREAM_OVERRIDE"),
  ],
  globalOutbound = "upstreams",
);
