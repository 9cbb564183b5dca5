// The workerd peer of the gateway shim: a trivial JavaScript fetch proxy
// that checks nothing and passes every request to one upstream (method,
// target, fields and body as received). What workerd itself costs per
// forwarded request; the shim's own cost is the difference
// (benches/gateways.sh runs both against the same upstream).
export default {
  /** env.UPSTREAM: the origin every request goes to, "http://HOST:PORT". */
  async fetch(request, env) {
    const url = request.url;
    const slash = url.indexOf("/", url.indexOf("//") + 2);
    return fetch(env.UPSTREAM + (slash < 0 ? "/" : url.slice(slash)), request);
  },
};
