// The certificate-bound tokens script (certificate-script.mjs) through
// every host: host-sim serve and Envoy ending TLS with a client CA,
// workerd with the client certificate as Cloudflare's edge reports it,
// and wasmtime serve, which sees no client certificate and so refuses
// every certificate-bound token. The module built from
// testkit/fixture-dpop.toml decides on every host; nothing refused
// reaches the recording upstream.
//
//   node --test testkit/conformance/certificate.test.mjs
import { after } from "node:test";
import { makeCertificates, runCertificateScript } from "./certificate-script.mjs";
import { DPOP_ORIGINS } from "./dpop-script.mjs";
import { throughEveryHost } from "./fixture-hosts.mjs";

const certificates = makeCertificates();
after(() => certificates.remove());
const { ca, server } = certificates;

throughEveryHost({
  name: "dpop",
  origins: DPOP_ORIGINS,
  what: "certificate-bound tokens",
  title: "a bound token passes only with its client certificate; nothing refused reaches the upstream",
  starts: {
    "host-sim": ["--tls-cert", server.certFile, "--tls-key", server.keyFile, "--tls-client-ca", ca.certFile],
    envoy: ["--tls-cert", server.certFile, "--tls-key", server.keyFile, "--client-ca", ca.certFile],
    workerd: { edge: true },
  },
  differences: {
    "host-sim": { transport: "tls" },
    envoy: { transport: "tls" },
    workerd: { transport: "edge" },
    "wasi-http": { transport: "none" },
  },
  script: (host, recorder, differences) => runCertificateScript(host.port, recorder, { ...differences, certificates }),
});
