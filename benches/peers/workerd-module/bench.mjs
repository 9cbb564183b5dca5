// The module alone in workerd's V8: decides one request head `n` times in
// one fetch, in one reused instance, and answers the sum of the statuses.
// workerd stops its clocks while JavaScript runs, so run.sh times the
// request from the client. The head comes from heads.json (`valid`, a token
// presented again, so a cache hit; `bad`, a bad signature), written by
// run.sh from the benchmark corpus.
import gatewayWasm from "gateway.wasm";
import heads from "heads.json";

const exports = new WebAssembly.Instance(gatewayWasm, {}).exports;
const encoder = new TextEncoder();
const context = encoder.encode("http 127.0.0.1\n");

export default {
  fetch(request) {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get("n") ?? 1000);
    const head = encoder.encode(heads[url.searchParams.get("kind") ?? "valid"]);
    let statuses = 0;
    for (let i = 0; i < n; i++) {
      const input = new Uint8Array(exports.memory.buffer, exports.input_ptr(), exports.input_capacity());
      input.set(context);
      input.set(head, context.length);
      statuses += exports.handle(context.length + head.length, heads.now);
    }
    return new Response(String(statuses));
  },
};
