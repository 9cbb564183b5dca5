// The Hono upstream of the readings suite, served by @hono/node-server, as
// apps are commonly written: the default router (case-sensitive, strict
// about a trailing slash, the path decoded once), and Hono's
// `methodOverride` middleware in both of its modes that read a request's
// own content: form mode (`_method` in a urlencoded or multipart body, its
// default) and query mode (`_method` in the query). Hono's middleware
// overrides every method but GET, so a PUT, PATCH, OPTIONS, DELETE, POST
// or HEAD that names DELETE runs the DELETE handler; the method it names
// is normalized as fetch's Request normalizes one (`delete` is DELETE).
// The same handlers as the Express app: each protected resource answers
// its marker; the metrics handler takes every method and every path below
// it, as `app.use` mounts it in Express; the drafts handler every method
// on its one path (`app.all`), before the documentation's wildcard (Hono
// runs the first handler that matches).
//
//   node hono-app.mjs   prints "listening 127.0.0.1:PORT", exits after LIFETIME_SECS (default 600)
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { methodOverride } from "hono/method-override";

const app = new Hono();
const marker = (name) => (c) => {
  c.header("x-readings-marker", name);
  return c.text(`READINGS-MARKER ${name}\n`);
};

app.use(async (c, next) => {
  await next();
  c.res.headers.set("x-readings-server", "hono");
});
app.use(methodOverride({ app }));
app.use(methodOverride({ app, query: "_method" }));

app.get("/healthz", (c) => c.text("ok\n"));
app.all("/docs/drafts", marker("docs-drafts"));
app.get("/docs/*", (c) => c.text("docs\n"));
app.all("/internal/metrics", marker("internal-metrics"));
app.all("/internal/metrics/*", marker("internal-metrics"));
app.get("/admin/users", marker("admin-users"));
app.get("/account/export", marker("account-export"));
app.get("/account/profile", (c) => c.text("account profile\n"));
app.get("/orders/:id", (c) => c.text(`order ${c.req.param("id")}\n`));
app.delete("/orders/:id", marker("orders-delete"));
app.get("/reports/daily", marker("reports-daily"));

const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => {
  console.log(`listening 127.0.0.1:${info.port}`);
});
setTimeout(() => {
  server.close();
  process.exit(0);
}, Number(process.env.LIFETIME_SECS ?? 600) * 1000).unref();
