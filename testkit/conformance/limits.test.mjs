// The rate-limit conformance script (limits-script.mjs) through every host,
// each counting with its own limiter: host-sim serve in process, workerd
// in a Durable Object per bucket, Envoy in its local_ratelimit filters,
// wasmtime serve in the component's instance. The module built from
// testkit/fixture-limits.toml decides on every host; the script holds each
// host to the same statuses, fields and bodies, and to nothing refused
// reaching the recording upstream. Where a host cannot do the same, the
// script is told so and the host's README says why: Envoy does not report
// remaining counts; wasi:http shows a component no client address.
// (host-sim with Redis: host-sim/tests/traffic.rs.)
//
//   node --test testkit/conformance/limits.test.mjs
import { throughEveryHost } from "./fixture-hosts.mjs";
import { ONE_INSTANCE_PAUSE_MS } from "../../deploy/wasi-http/harness.mjs";
import { LIMITS_ORIGINS, runLimitsScript } from "./limits-script.mjs";

throughEveryHost({
  name: "limits",
  origins: LIMITS_ORIGINS,
  what: "rate limits",
  title: "the conformance script: per subject, route, claim and address; nothing refused reaches the upstream",
  script: (host, recorder, differences) => runLimitsScript(`http://127.0.0.1:${host.port}`, recorder, differences),
  differences: { envoy: { remaining: false }, "wasi-http": { peer: "unknown", pauseMs: ONE_INSTANCE_PAUSE_MS } },
});
