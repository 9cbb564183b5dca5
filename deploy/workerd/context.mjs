// The context line (worker/ABI.md, "Calling sequence"): what only the host
// knows about the connection, written before the request head.

/**
 * The context line the module reads before the head: the scheme the client
 * used, its address and, over TLS, the thumbprint of the client certificate
 * Cloudflare verified. workerd reports the peer as `request.cf.clientIp`
 * ("ip" or "ip:port"); Cloudflare's edge as the CF-Connecting-IP field it
 * sets itself. Anything else, or nothing, is "unknown".
 */
export function contextLine(request) {
  // Not `new URL()`: workerd builds request.url from the Host field, which
  // may not parse (two Host fields joined with ", "); the module judges Host.
  const scheme = request.url.startsWith("https:") ? "https" : "http";
  const cf = request.cf;
  const peer = cf ? cf.clientIp ?? request.headers.get("cf-connecting-ip") ?? "" : "";
  const certificate = scheme === "https" ? clientCertificate(cf) : null;
  return `${scheme} ${peerAddress(peer)}${certificate ? ` ${certificate}` : ""}\n`;
}

/**
 * The thumbprint (`x5t#S256`: SHA-256 in base64url) of the client
 * certificate Cloudflare's edge verified in the TLS handshake (an mTLS
 * rule of API Shield or Access), from `request.cf.tlsClientAuth`; null
 * when none was presented, or it failed verification. Certificate-bound
 * tokens (RFC 8705) are checked against it by the module.
 */
export function clientCertificate(cf) {
  const auth = cf?.tlsClientAuth;
  if (!auth || auth.certPresented !== "1" || auth.certVerified !== "SUCCESS") return null;
  const hex = auth.certFingerprintSHA256;
  if (typeof hex !== "string" || !/^[0-9a-fA-F]{64}$/.test(hex)) return null;
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The address in "ip", "ip:port" or "[ipv6]:port", or "unknown". */
function peerAddress(peer) {
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(peer);
  const v6WithPort = v4WithPort ? null : /^\[([0-9a-fA-F:.]+)\]:\d+$/.exec(peer);
  const address = v4WithPort?.[1] ?? v6WithPort?.[1] ?? peer;
  return /^[0-9a-fA-F:.]{2,45}$/.test(address) ? address : "unknown";
}
