// The real upstream servers of the readings suite, each started as its own
// process on a loopback port with its users' default configuration
// (servers/ holds each one's configuration and handlers): nginx and Tomcat
// 10 from Debian's packages, Express 4, Fastify 4 and Hono (on
// @hono/node-server) from package.json, Flask/Werkzeug from the venv
// testkit/readings/install.sh makes. Every process runs under
// `timeout`, so it ends by itself even if the test process dies; stop()
// ends it sooner.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ROOT, freePort, rawRequest, startProcess } from "../../deploy/workerd/harness.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const SERVERS = join(HERE, "servers");
/** The Flask venv testkit/readings/install.sh makes. */
export const FLASK_PYTHON = join(ROOT, "target", "readings-venv", "bin", "python");
const TOMCAT_HOME = "/usr/share/tomcat10";
const NGINX = "/usr/sbin/nginx";
/** How long a server may live at most (seconds): the whole suite takes far less. */
const LIFETIME_SECS = 900;
const INSTALL_HINT = "run 'make readings' (or bash testkit/readings/install.sh)";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits (bounded) until the server answers GET /healthz with its name in
 * x-readings-server: listening is not enough (Tomcat binds before its
 * application is deployed).
 */
async function waitReady(name, proc, port, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exited()) throw new Error(`${name} exited early (${JSON.stringify(proc.exited())}):\n${proc.output()}`);
    const answer = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: ready.test\r\nConnection: close\r\n\r\n`, 2000).catch(
      () => null,
    );
    if (answer?.status === 200 && answer.headers["x-readings-server"] === name) return;
    await sleep(100);
  }
  throw new Error(`${name} did not answer GET /healthz on 127.0.0.1:${port} within ${timeoutMs} ms:\n${proc.output()}`);
}

/** `command args` under coreutils' timeout, so that it ends by itself. */
const bounded = (command, args, options) =>
  startProcess("timeout", ["--kill-after=5", String(LIFETIME_SECS), command, ...args], options);

/** Starts a server that prints "listening 127.0.0.1:PORT"; resolves to its port. */
async function startPrintingPort(name, command, args) {
  const proc = bounded(command, args, { env: { ...process.env, LIFETIME_SECS: String(LIFETIME_SECS) } });
  const deadline = Date.now() + 60000;
  while (Date.now() < deadline) {
    const m = proc.output().match(/listening 127\.0\.0\.1:(\d+)/);
    if (m) {
      const port = Number(m[1]);
      await waitReady(name, proc, port);
      return { name, port, proc };
    }
    if (proc.exited()) break;
    await sleep(50);
  }
  const output = proc.output();
  await proc.stop();
  throw new Error(`${name} printed no listening address within 60 s:\n${output}`);
}

/**
 * Starts a server whose port goes into its configuration: `prepare(port)`
 * writes the configuration and returns [command, args, dir]; a port taken in
 * the meantime is retried with another.
 */
async function startOnFreePort(name, prepare) {
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const [command, args, dir] = prepare(port);
    const proc = bounded(command, args, { cwd: dir });
    try {
      await waitReady(name, proc, port);
      const stop = proc.stop.bind(proc);
      proc.stop = async () => {
        const info = await stop();
        rmSync(dir, { recursive: true, force: true });
        return info;
      };
      return { name, port, proc };
    } catch (e) {
      lastError = e;
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  throw lastError;
}

/** nginx with servers/nginx.conf, its own prefix folder, never the system service. */
function startNginx() {
  if (!existsSync(NGINX)) throw new Error(`${NGINX} is missing: ${INSTALL_HINT}`);
  return startOnFreePort("nginx", (port) => {
    const dir = mkdtempSync(join(tmpdir(), "readings-nginx-"));
    const conf = readFileSync(join(SERVERS, "nginx.conf"), "utf8").replace("127.0.0.1:PORT", `127.0.0.1:${port}`);
    writeFileSync(join(dir, "nginx.conf"), conf);
    return [NGINX, ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", "stderr"], dir];
  });
}

/** Express: servers/express-app.mjs. */
function startExpress() {
  return startPrintingPort("express", process.execPath, [join(SERVERS, "express-app.mjs")]);
}

/** Fastify 4 with its default options: servers/fastify-app.mjs. */
function startFastify() {
  return startPrintingPort("fastify", process.execPath, [join(SERVERS, "fastify-app.mjs")]);
}

/** Hono on @hono/node-server, with its method-override middleware: servers/hono-app.mjs. */
function startHono() {
  return startPrintingPort("hono", process.execPath, [join(SERVERS, "hono-app.mjs")]);
}

/** Flask on Werkzeug's threaded server: servers/flask_app.py in the venv. */
function startFlask() {
  if (!existsSync(FLASK_PYTHON)) throw new Error(`${FLASK_PYTHON} is missing: ${INSTALL_HINT}`);
  return startPrintingPort("flask", FLASK_PYTHON, [join(SERVERS, "flask_app.py")]);
}

/**
 * Tomcat 10 as catalina.sh runs it (Bootstrap, CATALINA_HOME Debian's,
 * CATALINA_BASE a folder of its own): servers/tomcat's server.xml, the
 * default servlet of conf/web.xml, and the application's web.xml with
 * Readings.java compiled against Tomcat's servlet API.
 */
function startTomcat() {
  const jars = ["bin/bootstrap.jar", "bin/tomcat-juli.jar", "lib/servlet-api.jar"].map((j) => join(TOMCAT_HOME, j));
  for (const jar of jars) if (!existsSync(jar)) throw new Error(`${jar} is missing: ${INSTALL_HINT}`);
  const source = join(SERVERS, "tomcat");
  return startOnFreePort("tomcat", (port) => {
    const base = mkdtempSync(join(tmpdir(), "readings-tomcat-"));
    const app = join(base, "webapps", "ROOT", "WEB-INF");
    for (const dir of ["conf", "logs", "temp", "work"]) mkdirSync(join(base, dir));
    mkdirSync(join(app, "classes"), { recursive: true });
    const server = readFileSync(join(source, "server.xml"), "utf8").replace('port="PORT"', `port="${port}"`);
    writeFileSync(join(base, "conf", "server.xml"), server);
    copyFileSync(join(source, "default-web.xml"), join(base, "conf", "web.xml"));
    copyFileSync(join(source, "web.xml"), join(app, "web.xml"));
    const javac = spawnSync("javac", ["-d", join(app, "classes"), "-cp", jars[2], join(source, "Readings.java")], {
      encoding: "utf8",
      timeout: 60000,
    });
    if (javac.status !== 0) throw new Error(`javac Readings.java failed: ${javac.stderr || javac.error}`);
    const args = [
      "-Xmx128m",
      "-XX:TieredStopAtLevel=1", // start fast: the suite's load is small
      `-Dcatalina.home=${TOMCAT_HOME}`,
      `-Dcatalina.base=${base}`,
      `-Djava.io.tmpdir=${join(base, "temp")}`,
      "-cp",
      `${jars[0]}:${jars[1]}`,
      "org.apache.catalina.startup.Bootstrap",
      "start",
    ];
    return ["java", args, base];
  });
}

/** Each server of the suite: its name and how to start it. */
export const SERVER_STARTS = [
  ["nginx", startNginx],
  ["express", startExpress],
  ["fastify", startFastify],
  ["hono", startHono],
  ["flask", startFlask],
  ["tomcat", startTomcat],
];

/** Starts every server at once; resolves to [{ name, port, proc }] in SERVER_STARTS's order. */
export async function startServers() {
  const results = await Promise.allSettled(SERVER_STARTS.map(([, start]) => start()));
  const failed = results.filter((r) => r.status === "rejected");
  if (failed.length > 0) {
    await Promise.all(results.filter((r) => r.status === "fulfilled").map((r) => r.value.proc.stop()));
    throw failed[0].reason;
  }
  return results.map((r) => r.value);
}
