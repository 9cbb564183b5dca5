// The front end `wasmtime serve` needs before it faces clients: Envoy on
// the listening address, `wasmtime serve` behind it on loopback.
//
// `wasmtime serve` (wasmtime-cli 48) has no timeout for reading a request
// head and none for an idle connection, and it takes one of its
// `--max-concurrent-connections` slots (1,000 by default) before it
// accepts: a client that sends half a head and stalls holds its slot for as
// long as it likes, and a thousand such clients stop every other request.
// Envoy reads each request head within `request_headers_timeout`, closes a
// connection idle for `idle_timeout`, caps its own connections, and hands
// `wasmtime serve` only complete heads, over a bounded pool of connections.
// Its HTTP/1 codec also refuses what wasi:http would hide from the
// component: `Content-Length` beside `Transfer-Encoding` (400), and codings
// other than `chunked` (501).
//
// Renders the Envoy config (YAML; JSON is YAML) from the options below.
//
//   node deploy/wasi-http/front.mjs --listen 127.0.0.1:8080 --backend 127.0.0.1:8081 --out FILE
//     [--admin 127.0.0.1:9902] [--header-timeout-s 10] [--idle-timeout-s 60]
//     [--stream-idle-timeout-s 60] [--max-connections 10000] [--backend-connections 256]

import { writeFileSync } from "node:fs";

/** The defaults `make deploy-wasi-http FRONT=envoy` runs with. */
export const FRONT_DEFAULTS = {
  /** How long a client may take to send a request's whole head. */
  headerTimeoutS: 10,
  /** How long a client connection may stay open with no request on it. */
  idleTimeoutS: 60,
  /**
   * How long a request may go without a byte either way: above the
   * component's own bounds (30 s for the upstream's first byte and between
   * two of its bytes, 10 s for a stalled client body).
   */
  streamIdleTimeoutS: 60,
  /** Client connections Envoy holds at most (its overload manager). */
  maxConnections: 10000,
  /** Connections Envoy opens to `wasmtime serve` at most (below its 1,000 slots). */
  backendConnections: 256,
};

/** "host:port" as Envoy's socket address. */
function socketAddress(hostPort) {
  const at = hostPort.lastIndexOf(":");
  const port = Number(hostPort.slice(at + 1));
  if (at < 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`not HOST:PORT: ${hostPort}`);
  return { address: hostPort.slice(0, at).replace(/^\[|\]$/g, ""), port_value: port };
}

/**
 * The Envoy config: `listen` (HOST:PORT) in front of `backend` (the
 * `wasmtime serve` address, HOST:PORT), `admin` (HOST:PORT, or null for
 * none), and the limits of FRONT_DEFAULTS, each of which `options` may set.
 * Envoy forwards the request as it came (the client's Host, its fields, the
 * path as sent: no normalization, no request id, no `x-envoy-*` fields)
 * and appends the client's address to `X-Forwarded-For`, which the gateway
 * reads with `trusted_proxy_hops = 1`.
 */
export function renderEnvoyFront({ listen, backend, admin = null, ...options }) {
  const limits = { ...FRONT_DEFAULTS, ...options };
  const seconds = (n) => `${n}s`;
  const config = {
    static_resources: {
      listeners: [
        {
          name: "front",
          address: { socket_address: socketAddress(listen) },
          per_connection_buffer_limit_bytes: 65536,
          filter_chains: [
            {
              filters: [
                {
                  name: "envoy.filters.network.http_connection_manager",
                  typed_config: {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    stat_prefix: "front",
                    codec_type: "HTTP1",
                    request_headers_timeout: seconds(limits.headerTimeoutS),
                    stream_idle_timeout: seconds(limits.streamIdleTimeoutS),
                    common_http_protocol_options: { idle_timeout: seconds(limits.idleTimeoutS) },
                    use_remote_address: true,
                    generate_request_id: false,
                    server_header_transformation: "PASS_THROUGH",
                    route_config: {
                      name: "front",
                      virtual_hosts: [
                        {
                          name: "all",
                          domains: ["*"],
                          // The component bounds each exchange itself; the route adds no timeout of its own.
                          routes: [{ match: { prefix: "/" }, route: { cluster: "wasmtime_serve", timeout: "0s" } }],
                        },
                      ],
                    },
                    http_filters: [
                      {
                        name: "envoy.filters.http.router",
                        typed_config: {
                          "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
                          suppress_envoy_headers: true,
                        },
                      },
                    ],
                  },
                },
              ],
            },
          ],
        },
      ],
      clusters: [
        {
          name: "wasmtime_serve",
          type: "STATIC",
          connect_timeout: "5s",
          circuit_breakers: {
            thresholds: [
              {
                max_connections: limits.backendConnections,
                max_pending_requests: limits.maxConnections,
                max_requests: limits.maxConnections,
              },
            ],
          },
          load_assignment: {
            cluster_name: "wasmtime_serve",
            endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: socketAddress(backend) } } }] }],
          },
        },
      ],
    },
    overload_manager: {
      resource_monitors: [
        {
          name: "envoy.resource_monitors.global_downstream_max_connections",
          typed_config: {
            "@type": "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
            max_active_downstream_connections: limits.maxConnections,
          },
        },
      ],
    },
  };
  if (admin) config.admin = { address: { socket_address: socketAddress(admin) } };
  return `# Rendered by deploy/wasi-http/front.mjs: Envoy in front of wasmtime serve.\n${JSON.stringify(config, null, 2)}\n`;
}

/** The command line: `--name value` pairs into renderEnvoyFront's options. */
function parseArgs(argv) {
  const names = {
    "--listen": "listen",
    "--backend": "backend",
    "--admin": "admin",
    "--out": "out",
    "--header-timeout-s": "headerTimeoutS",
    "--idle-timeout-s": "idleTimeoutS",
    "--stream-idle-timeout-s": "streamIdleTimeoutS",
    "--max-connections": "maxConnections",
    "--backend-connections": "backendConnections",
  };
  const options = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = names[argv[i]];
    if (!name || argv[i + 1] === undefined) throw new Error(`unknown option or missing value: ${argv[i]}`);
    options[name] = name.endsWith("S") || name.endsWith("Connections") ? Number(argv[i + 1]) : argv[i + 1];
  }
  for (const required of ["listen", "backend", "out"]) {
    if (!options[required]) throw new Error(`--${required} is required`);
  }
  return options;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const { out, ...options } = parseArgs(process.argv.slice(2));
    writeFileSync(out, renderEnvoyFront(options));
  } catch (e) {
    console.error(`error: ${e.message}`);
    process.exit(2);
  }
}
