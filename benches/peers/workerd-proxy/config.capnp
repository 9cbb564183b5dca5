# workerd configuration of the benchmark peer: a trivial fetch proxy
# (proxy.mjs) on the same runtime, flags and compatibility date as the
# gateway Worker (deploy/workerd/config.capnp), forwarding to the upstream
# named by the GATEWAY_PEER_UPSTREAM environment variable.
#
#   GATEWAY_PEER_UPSTREAM=http://127.0.0.1:9101 node_modules/.bin/workerd \
#     serve benches/peers/workerd-proxy/config.capnp --socket-addr http=127.0.0.1:8788
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "proxy", worker = .proxyWorker),
    (name = "upstreams", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:8788", http = (), service = "proxy"),
  ],
);

const proxyWorker :Workerd.Worker = (
  modules = [
    (name = "proxy.mjs", esModule = embed "proxy.mjs"),
  ],
  compatibilityDate = "2026-05-01",
  bindings = [
    (name = "UPSTREAM", fromEnvironment = "GATEWAY_PEER_UPSTREAM"),
  ],
  globalOutbound = "upstreams",
);
