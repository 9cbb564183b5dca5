// The Express 4 upstream of the readings suite, as apps are commonly
// written: the default router (case-insensitive, non-strict trailing
// slash), method-override for HTML forms and clients behind proxies that
// only send POST (the header, `_method` in the query, `_method` in a form
// body: the README's recipes), metrics middleware mounted with app.use,
// the drafts handler (every method, `app.all`) before the documentation's
// wildcard, which would answer it first.
// Each protected resource answers its marker.
//
//   node express-app.mjs   prints "listening 127.0.0.1:PORT", exits after LIFETIME_SECS (default 600)
import express from "express";
import methodOverride from "method-override";

const app = express();
const marker = (name) => (req, res) => {
  res.set("x-readings-marker", name);
  res.type("text").send(`READINGS-MARKER ${name}\n`);
};

app.use((req, res, next) => {
  res.set("x-readings-server", "express");
  next();
});
app.use(methodOverride("X-HTTP-Method-Override"));
app.use(methodOverride("_method"));
app.use(express.urlencoded({ extended: false }));
app.use(
  methodOverride((req) => {
    if (req.body && typeof req.body === "object" && "_method" in req.body) {
      const method = req.body._method;
      delete req.body._method;
      return method;
    }
    return undefined;
  }),
);

app.get("/healthz", (req, res) => res.type("text").send("ok\n"));
app.all("/docs/drafts", marker("docs-drafts"));
app.get("/docs/*", (req, res) => res.type("text").send("docs\n"));
app.use("/internal/metrics", marker("internal-metrics"));
app.get("/admin/users", marker("admin-users"));
app.get("/account/export", marker("account-export"));
app.get("/account/profile", (req, res) => res.type("text").send("account profile\n"));
app.get("/orders/:id", (req, res) => res.type("text").send(`order ${req.params.id}\n`));
app.delete("/orders/:id", marker("orders-delete"));
app.get("/reports/daily", marker("reports-daily"));

const server = app.listen(0, "127.0.0.1", () => {
  console.log(`listening 127.0.0.1:${server.address().port}`);
});
setTimeout(() => process.exit(0), Number(process.env.LIFETIME_SECS ?? 600) * 1000).unref();
