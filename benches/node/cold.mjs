// One request in a new Node.js process, as `host-sim eval` does it in a new
// wasmtime process: read a JSON line ({"request", "now"}) from stdin, compile
// and instantiate dist/gateway.wasm, decide, print the status.
//
//   node benches/node/cold.mjs MODULE.wasm < one-request.jsonl
import { readFileSync } from 'node:fs';

const line = JSON.parse(readFileSync(0, 'utf8').split('\n')[0]);
const module = new WebAssembly.Module(readFileSync(process.argv[2]));
const e = new WebAssembly.Instance(module).exports;
// The context line a host writes before the head (worker/ABI.md), then the head.
const input = new TextEncoder().encode(`http 127.0.0.1\n${line.request}`);
new Uint8Array(e.memory.buffer, e.input_ptr(), input.length).set(input);
console.log(JSON.stringify({ status: e.handle(input.length, line.now ?? Date.now() / 1000) }));
