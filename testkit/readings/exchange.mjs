// One request on a fresh loopback connection, done when its one response is
// complete (by its framing), not when the peer closes: Envoy keeps a
// connection it answered itself open for up to a second (its
// delayed_close_timeout) even after Connection: close.
import net from "node:net";

/**
 * The end of the response in `buf` (the index after it), or -1 while it is
 * incomplete. `head` is the response head; a response to HEAD, a 1xx, 204
 * or 304 ends with its head (RFC 9112 section 6.3).
 */
function responseEnd(buf, headEnd, head, method) {
  const status = Number(head.split(" ", 2)[1]);
  if (method === "HEAD" || status === 204 || status === 304 || (status >= 100 && status < 200)) return headEnd;
  if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
    let at = headEnd;
    for (;;) {
      const lineEnd = buf.indexOf("\r\n", at);
      if (lineEnd < 0) return -1;
      const size = parseInt(buf.subarray(at, lineEnd).toString("latin1"), 16);
      if (Number.isNaN(size)) return -1;
      if (size === 0) {
        const end = buf.indexOf("\r\n\r\n", lineEnd);
        return end < 0 ? -1 : end + 4;
      }
      at = lineEnd + 2 + size + 2;
      if (at > buf.length) return -1;
    }
  }
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length) return headEnd + Number(length[1]) <= buf.length ? headEnd + Number(length[1]) : -1;
  return -1; // delimited by the close
}

/** Parses one response: { status, headers (names lower-cased, the last of each), body (latin1, de-chunked) }. */
function parse(buf, method) {
  const headEnd = buf.indexOf("\r\n\r\n");
  if (headEnd < 0) return { status: 0, headers: {}, body: "" };
  const lines = buf.subarray(0, headEnd).toString("latin1").split("\r\n");
  const headers = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = method === "HEAD" ? Buffer.alloc(0) : buf.subarray(headEnd + 4);
  if (method !== "HEAD" && /chunked/i.test(headers["transfer-encoding"] ?? "")) {
    const parts = [];
    for (let at = 0; ; ) {
      const lineEnd = body.indexOf("\r\n", at);
      const size = lineEnd < 0 ? 0 : parseInt(body.subarray(at, lineEnd).toString("latin1"), 16);
      if (!(size > 0)) break;
      parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  }
  return { status: Number(lines[0].split(" ")[1]) || 0, headers, body: body.toString("latin1") };
}

/**
 * Sends `bytes` (a latin1 string) to 127.0.0.1:`port` and resolves to the
 * one response, or to status 0 when the connection ends (or `timeoutMs`
 * passes) without a complete one. Never rejects.
 */
export function exchange(port, bytes, timeoutMs) {
  const method = bytes.slice(0, bytes.indexOf(" ")).toUpperCase() === "HEAD" ? "HEAD" : "";
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    let buf = Buffer.alloc(0);
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(parse(buf, method));
    };
    const timer = setTimeout(done, timeoutMs);
    sock.on("data", (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      const headEnd = buf.indexOf("\r\n\r\n");
      if (headEnd < 0) return;
      const end = responseEnd(buf, headEnd + 4, buf.subarray(0, headEnd).toString("latin1"), method);
      if (end >= 0) done();
    });
    sock.on("error", done);
    sock.on("close", done);
    sock.write(Buffer.from(bytes, "latin1"));
  });
}
