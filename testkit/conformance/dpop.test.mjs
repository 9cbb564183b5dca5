// The DPoP conformance script (dpop-script.mjs) through every host, each
// refusing a proof used twice with its own store: host-sim serve in
// process, workerd in a Durable Object per bucket, Envoy in its
// local_ratelimit filters, wasmtime serve in the component's instance.
// The module built from testkit/fixture-dpop.toml decides on every host;
// the script holds each host to the same statuses, challenges and bodies,
// to nothing refused reaching the recording upstream, and to no proof or
// token travelling upstream.
//
//   node --test testkit/conformance/dpop.test.mjs
import { ONE_INSTANCE_PAUSE_MS } from "../../deploy/wasi-http/harness.mjs";
import { DPOP_ORIGINS, runDpopScript } from "./dpop-script.mjs";
import { throughEveryHost } from "./fixture-hosts.mjs";

throughEveryHost({
  name: "dpop",
  origins: DPOP_ORIGINS,
  what: "DPoP",
  title: "the conformance script: proofs verified, replays refused, nothing refused reaches the upstream",
  script: (host, recorder, differences) => runDpopScript(host.port, recorder, differences),
  differences: { "wasi-http": { pauseMs: ONE_INSTANCE_PAUSE_MS } },
});
