// One request in a new Node.js process, as `host-sim eval` does it in a new
// wasmtime process: read a JSON line ({"request", "now"}) from stdin, compile
// and instantiate dist/gateway.wasm, decide, print the status.
//
//   node benches/node/cold.mjs MODULE.wasm < one-request.jsonl
import { readFileSync } from 'node:fs';

const line = JSON.parse(readFileSync(0, 'utf8').split('\n')[0]);
const module = new WebAssembly.Module(readFileSync(process.argv[2]));
const e = new WebAssembly.Instance(module).exports;
const head = new TextEncoder().encode(line.request);
new Uint8Array(e.memory.buffer, e.input_ptr(), head.length).set(head);
console.log(JSON.stringify({ status: e.handle(head.length, line.now ?? Date.now() / 1000) }));
