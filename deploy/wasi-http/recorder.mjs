// Test support: a recording upstream that reads requests off the socket
// itself (no HTTP library between it and the bytes), so that a test sees
// the framing a host forwarded: Content-Length, chunked, or none, and
// whether the request arrived complete. Loopback only.
import net from "node:net";

/**
 * A request as it arrived: { method, target, fields: [[name, value]] (names
 * lower case), framing: "length N" | "chunked" | "none", body (latin1),
 * complete }. An incomplete one is a request whose connection closed
 * before its head or body ended.
 */
function parse(buf) {
  const end = buf.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
  const [method, target] = lines[0].split(" ");
  const fields = lines.slice(1).map((line) => {
    const colon = line.indexOf(":");
    return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
  });
  const named = (name) => fields.filter(([n]) => n === name).map(([, v]) => v);
  const rest = buf.subarray(end + 4);
  if (named("transfer-encoding").length > 0) {
    const body = dechunk(rest);
    return { method, target, fields, framing: "chunked", body: body?.toString("latin1") ?? "", complete: body !== null };
  }
  const lengths = named("content-length");
  if (lengths.length > 0) {
    const length = Number(lengths[0]);
    return {
      method,
      target,
      fields,
      framing: `length ${length}`,
      body: rest.subarray(0, length).toString("latin1"),
      complete: rest.length >= length,
    };
  }
  return { method, target, fields, framing: "none", body: "", complete: true };
}

/** A chunked body's bytes, or null while its last chunk has not come. */
function dechunk(buf) {
  const out = [];
  let at = 0;
  for (;;) {
    const lineEnd = buf.indexOf("\r\n", at);
    if (lineEnd < 0) return null;
    const size = parseInt(buf.subarray(at, lineEnd).toString("latin1"), 16);
    if (Number.isNaN(size)) return null;
    if (size === 0) {
      // The last chunk, then trailer fields (if any) and an empty line.
      const tail = buf.subarray(lineEnd + 2);
      const ended = tail.subarray(0, 2).toString("latin1") === "\r\n" || tail.indexOf("\r\n\r\n") >= 0;
      return ended ? Buffer.concat(out) : null;
    }
    if (buf.length < lineEnd + 2 + size + 2) return null;
    out.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/**
 * The recorder: answers each complete request 200 `ok` and closes the
 * connection. `requests` lists every request, complete or not, in the
 * order its connection ended; `forTarget(t)` those sent to target `t`.
 */
export async function startRecorder() {
  const requests = [];
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let buf = Buffer.alloc(0);
    let done = false;
    socket.on("data", (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      const request = parse(buf);
      if (done || !request?.complete) return;
      done = true;
      requests.push(request);
      socket.end("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      sockets.delete(socket);
      if (!done && buf.length > 0) requests.push({ ...(parse(buf) ?? { head: buf.toString("latin1") }), complete: false });
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    requests,
    forTarget: (target) => requests.filter((r) => r.target === target),
    stop: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
