// Lists the largest functions of a wasm module by code size, from its name
// section: what dominates the module. Build one with names kept:
//
//   cargo worker-wasm --profile wasm --config build/size-profile.toml --config profile.wasm.strip=false \
//     --target-dir target/names
//   node build/function-sizes.mjs target/names/wasm32-unknown-unknown/wasm/worker.wasm [COUNT]
import { readFileSync } from "node:fs";

const [path, countArg] = process.argv.slice(2);
if (!path) {
  console.error("usage: node build/function-sizes.mjs MODULE [COUNT]");
  process.exit(2);
}
let bytes;
try {
  bytes = readFileSync(path);
} catch (e) {
  console.error(`error: ${path}: ${e.message}`);
  process.exit(1);
}

let at = 8; // magic and version
const leb = () => {
  let value = 0;
  for (let shift = 0; ; shift += 7) {
    const b = bytes[at++];
    value += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return value;
  }
};
const text = (len) => new TextDecoder().decode(bytes.subarray(at, (at += len)));

let imported = 0;
let data = 0;
const bodies = [];
const names = new Map();
while (at < bytes.length) {
  const id = bytes[at++];
  const size = leb();
  const end = at + size;
  if (id === 2) {
    for (let n = leb(); n > 0; n--) {
      text(leb());
      text(leb());
      if (bytes[at++] !== 0) {
        // Only function imports shift the function indices; the gateway has no imports at all.
        console.error(`error: ${path}: imports other than functions are not supported here`);
        process.exit(1);
      }
      leb();
      imported++;
    }
  } else if (id === 10) {
    for (let n = leb(); n > 0; n--) {
      const len = leb();
      bodies.push(len);
      at += len;
    }
  } else if (id === 11) {
    data = size;
  } else if (id === 0 && text(leb()) === "name") {
    while (at < end) {
      const sub = bytes[at++];
      const subEnd = leb() + at;
      if (sub === 1) {
        for (let n = leb(); n > 0; n--) {
          const index = leb();
          names.set(index, text(leb()));
        }
      }
      at = subEnd;
    }
  }
  at = end;
}
if (names.size === 0) console.error("note: no name section: build with profile.wasm.strip=false");
const total = bodies.reduce((a, b) => a + b, 0);
console.log(`${path}: ${bytes.length} bytes; code ${total}, data ${data}, ${bodies.length} functions`);
bodies
  .map((size, i) => [size, names.get(i + imported) ?? `function ${i + imported}`])
  .sort((a, b) => b[0] - a[0])
  .slice(0, Number(countArg ?? 15))
  .forEach(([size, name]) => console.log(`${String(size).padStart(7)}  ${name.slice(0, 110)}`));
