// Checks a built gateway module: no imports, the ABI exports present, the
// ABI version answered, and the size within budget. Prints the sizes.
//
// usage: node build/check-module.mjs MODULE BUDGET_BYTES [RAW_BYTES]
import { readFileSync } from "node:fs";

const [path, budgetArg, rawArg] = process.argv.slice(2);
const fail = (message) => {
  console.error(`error: ${path}: ${message}`);
  process.exit(1);
};
if (!path || !budgetArg) fail("usage: node build/check-module.mjs MODULE BUDGET_BYTES [RAW_BYTES]");

let bytes;
try {
  bytes = readFileSync(path);
} catch (e) {
  fail(`cannot read: ${e.message}`);
}
const budget = Number(budgetArg);
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;

let module;
try {
  module = new WebAssembly.Module(bytes);
} catch (e) {
  fail(`not a valid WebAssembly module: ${e.message}`);
}
const imports = WebAssembly.Module.imports(module);
if (imports.length > 0) {
  fail(`the module must import nothing, but imports ${imports.map((i) => `${i.module}.${i.name}`).join(", ")}`);
}
const exports = new Set(WebAssembly.Module.exports(module).map((e) => e.name));
const required = ["memory", "abi_version", "input_ptr", "input_capacity", "handle", "routes", "output_ptr", "output_len"];
const missing = required.filter((name) => !exports.has(name));
if (missing.length > 0) fail(`missing exports: ${missing.join(", ")}`);
const instance = new WebAssembly.Instance(module, {});
const version = instance.exports.abi_version();

if (rawArg) console.log(`raw (cargo, stripped):   ${String(rawArg).padStart(7)} bytes (${kib(Number(rawArg))})`);
console.log(`after wasm-opt:          ${String(bytes.length).padStart(7)} bytes (${kib(bytes.length)})`);
console.log(`budget:                  ${String(budget).padStart(7)} bytes (${kib(budget)}), ${((100 * bytes.length) / budget).toFixed(1)}% used`);
console.log(`imports: none; ABI version ${version}; exports: ${[...exports].sort().join(", ")}`);
if (bytes.length > budget) {
  fail(`${bytes.length} bytes is over the budget of ${budget} bytes by ${bytes.length - budget}`);
}
