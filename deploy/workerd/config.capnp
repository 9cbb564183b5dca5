# workerd configuration: the gateway Worker on loopback.
#
#   node_modules/.bin/workerd serve deploy/workerd/config.capnp \
#     --socket-addr http=127.0.0.1:8787
#
# (deploy/workerd/run.sh does this; `make deploy-local` runs it.)
# Schema: node_modules/workerd/workerd.capnp.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "gateway", worker = .gatewayWorker),
    # Outbound fetch() for the forwarded requests. workerd's default
    # "internet" service reaches public addresses only (SSRF protection);
    # the demo routes and the tests' upstreams are on 127.0.0.1, so this one
    # also allows private and local addresses. In a real deployment, narrow
    # it to the upstreams' networks (CIDR entries in `allow`).
    (name = "upstreams", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [
    # Override with --socket-addr http=HOST:PORT.
    (name = "http", address = "127.0.0.1:8787", http = (), service = "gateway"),
  ],
);

const gatewayWorker :Workerd.Worker = (
  modules = [
    (name = "worker.mjs", esModule = embed "worker.mjs"),
    (name = "gateway.mjs", esModule = embed "gateway.mjs"),
    (name = "keys.mjs", esModule = embed "keys.mjs"),
    (name = "observe.mjs", esModule = embed "observe.mjs"),
    (name = "limits.mjs", esModule = embed "limits.mjs"),
    (name = "context.mjs", esModule = embed "context.mjs"),
    (name = "gateway.wasm", wasm = embed "../../dist/gateway.wasm"),
  ],
  compatibilityDate = "2026-05-01",
  bindings = [
    # The rate-limit buckets of a module with [[limits]]: one GatewayLimiter
    # Durable Object per bucket key (worker.mjs). Without it such a module
    # refuses the requests its limits cover (500), never forwards them uncounted.
    (name = "LIMITS", durableObjectNamespace = "GatewayLimiter"),
    # Optional "FROM=TO[,FROM=TO]" upstream base URL mapping (tests); null when unset.
    (name = "UPSTREAM_OVERRIDE", fromEnvironment = "GATEWAY_UPSTREAM_OVERRIDE"),
    # One JSON line per decision on stdout: off (unset), on, or a share
    # such as 0.1 (observe.mjs). On Cloudflare, Workers Logs indexes them.
    (name = "DECISION_LOG", fromEnvironment = "GATEWAY_DECISION_LOG"),
    # The `iss` of the config dist/gateway.wasm was built from: it names the
    # one issuer of a module without a label table in the lines and data
    # points (`0` when unset). run.sh sets it from gateway.toml.
    (name = "ISSUER", fromEnvironment = "GATEWAY_ISSUER"),
    # A Workers Analytics Engine dataset, one data point per decision:
    # workerd posts each to a service of your own (--experimental), e.g.
    #   (name = "DECISIONS", analyticsEngine = "analytics"),
    # with (name = "analytics", external = (address = "127.0.0.1:9090", http = ()))
    # among the services.
  ],
  globalOutbound = "upstreams",
  durableObjectNamespaces = [
    # uniqueKey derives the objects' ids; keep it when redeploying, or the
    # buckets start full again.
    (className = "GatewayLimiter", uniqueKey = "edge-gateway-limits"),
  ],
  # In memory, a bucket's TAT is lost when workerd evicts its idle object
  # (after about 100 s without requests) and with the process: exact for a
  # limit whose window (burst x per_secs / requests) is within that, looser
  # beyond it (a per-hour limit starts again full after a quiet spell). For
  # buckets that outlive eviction and restarts, store them on disk:
  #   durableObjectStorage = (localDisk = "limits-disk"),
  # with (name = "limits-disk", disk = (path = "/var/lib/gateway/limits", writable = true))
  # among the services (the folder must exist).
  durableObjectStorage = (inMemory = void),
);
