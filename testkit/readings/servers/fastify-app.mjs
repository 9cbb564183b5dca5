// The Fastify 4 upstream of the readings suite, as apps are commonly
// written: `fastify()` with every option at its default, so its router
// (find-my-way) reads `;` as the start of the query
// (`useSemicolonDelimiter`, true in Fastify 4: `/account/export;/x` is the
// route `/account/export`), is case-sensitive and strict about a trailing
// slash, and answers HEAD with the GET route. The same handlers as the
// Express app: each protected resource answers its marker; the metrics
// handler takes every method and every path below it, as `app.use` mounts
// it in Express; the drafts handler every method on its one path
// (`app.all`), before the documentation's wildcard.
//
//   node fastify-app.mjs   prints "listening 127.0.0.1:PORT", exits after LIFETIME_SECS (default 600)
import http from "node:http";
import Fastify from "fastify";

// Every response the application makes names it, Fastify's own answers
// (a bad URL's 400, a 404, a 415) included.
const app = Fastify({
  serverFactory: (handler) =>
    http.createServer((req, res) => {
      res.setHeader("x-readings-server", "fastify");
      handler(req, res);
    }),
});
const marker = (name) => (request, reply) => {
  reply.header("x-readings-marker", name).type("text/plain").send(`READINGS-MARKER ${name}\n`);
};
const text = (body) => (request, reply) => {
  reply.type("text/plain").send(body);
};

app.get("/healthz", text("ok\n"));
app.all("/docs/drafts", marker("docs-drafts"));
app.get("/docs/*", text("docs\n"));
app.all("/internal/metrics", marker("internal-metrics"));
app.all("/internal/metrics/*", marker("internal-metrics"));
app.get("/admin/users", marker("admin-users"));
app.get("/account/export", marker("account-export"));
app.get("/account/profile", text("account profile\n"));
app.get("/orders/:id", (request, reply) => {
  reply.type("text/plain").send(`order ${request.params.id}\n`);
});
app.delete("/orders/:id", marker("orders-delete"));
app.get("/reports/daily", marker("reports-daily"));

await app.listen({ port: 0, host: "127.0.0.1" });
console.log(`listening 127.0.0.1:${app.server.address().port}`);
setTimeout(() => process.exit(0), Number(process.env.LIFETIME_SECS ?? 600) * 1000).unref();
