// Writes the conformance corpora, one case a line. Every host must give each
// case the same outcome: the status and reason of a refusal, or exactly what
// the upstream receives.
//
//   testkit/conformance/forwarding.jsonl  the forwarding rules, through the
//                                         module of testkit/fixture.toml
//   testkit/conformance/policies.jsonl    the policies (rules, CORS, token
//                                         sources, claims to headers, two
//                                         issuers), through the module of
//                                         testkit/fixture-policies.toml
//
//   make fixture && node testkit/conformance/generate.mjs
//
// The cases are in forwarding-cases.mjs and policy-cases.mjs, on the helpers
// of corpus-kit.mjs. (attacks.jsonl, the attack corpus, is written by
// security/tests/attacks.rs, with outcomes of its own that hosts.test.mjs
// reads.) The expectations are written from the rules (SECURITY.md,
// worker/ABI.md, the docs of worker/src/http and worker/src/policy), not
// from what any host does. Tokens are minted here with the fixtures' keys
// (read from the JSON `make fixture` writes) and expire in 2100, so the
// files are plain data that any runner can replay byte for byte.
//
// A case: { name, request, expect: [outcome, ...] } with `request` a latin1
// string (one char per byte) that may hold several pipelined requests, and
// one outcome per response:
//   { status, reason }                        refused by the module
//   { status: 200, upstream: { line, origin, headers, body } }
//                                             forwarded: the request line, the
//                                             route's origin, every field but
//                                             framing (sorted [name, value]
//                                             pairs, names lower-cased), the body
//   { any_of: [outcome, ...], why }           where a host's HTTP stack reshapes
//                                             the request before the module sees
//                                             it (RFC 9112 lets it); each choice
//                                             is safe; `why` says which and why
//   { hosts: { module, "host-sim", workerd, envoy, "wasi-http" }, why }
//                                             where the hosts' front ends reshape
//                                             the request each its own way: every
//                                             host's outcome pinned (`module` is
//                                             the native request path); each safe
//   { front_end: true }                       (alone) refused by the host's HTTP
//                                             stack itself: any status >= 400
//                                             that is not a module answer
// An outcome with `front_end: true` may instead come from the host's HTTP
// parser (the same status, not the module's reason). Whenever a host
// refuses, the upstream must see nothing.
//
// Any outcome but `front_end` may also state the response the client gets:
//   response_headers: [[name, value], ...]    each field present, with
//                                             exactly this value as RFC 9110
//                                             reads it: repeated field lines
//                                             joined with ", " (section 5.3),
//                                             the spaces around a list's
//                                             commas not significant (section
//                                             5.6.1; Envoy joins a repeated
//                                             `vary` with "," alone)
//   absent_response_headers: [name, ...]      each field absent
// An answer's body is JSON whose `error_description` is the reason; an
// answer without a body (204) has reason null. The recording upstream
// answers every forward with fields of its own (RECORDER_FIELDS in policy-cases.mjs,
// which its runners send or model), so a forward's response shows what the
// gateway removed from and added to the upstream's response.

import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { FORWARDING_CASES } from "./forwarding-cases.mjs";
import { POLICY_CASES } from "./policy-cases.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));

/** Writes `cases` to `file` in this folder, one JSON line each. */
function writeCorpus(file, cases) {
  const names = new Set();
  const lines = cases.map(([name, request, expect]) => {
    if (names.has(name)) throw new Error(`${file}: two cases named ${JSON.stringify(name)}`);
    names.add(name);
    return JSON.stringify({ name, request, expect });
  });
  writeFileSync(join(HERE, file), lines.join("\n") + "\n");
  console.log(`wrote ${lines.length} cases to testkit/conformance/${file}`);
}
writeCorpus("forwarding.jsonl", FORWARDING_CASES);
writeCorpus("policies.jsonl", POLICY_CASES);
