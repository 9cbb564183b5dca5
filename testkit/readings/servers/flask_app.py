"""The Flask upstream of the readings suite, as apps are commonly written:
Flask's routes (Werkzeug's default map: merge_slashes and strict_slashes on,
automatic HEAD and OPTIONS) served by Werkzeug's own threaded server on
loopback. Each protected resource answers its marker.

    python flask_app.py   prints "listening 127.0.0.1:PORT", exits after LIFETIME_SECS (default 600)
"""

import logging
import os
import threading

from flask import Flask, Response
from werkzeug.serving import make_server

app = Flask(__name__)


def marker(name):
    return Response(f"READINGS-MARKER {name}\n", mimetype="text/plain", headers={"x-readings-marker": name})


@app.after_request
def server_name(response):
    response.headers["x-readings-server"] = "flask"
    return response


@app.get("/healthz")
def healthz():
    return Response("ok\n", mimetype="text/plain")


@app.get("/docs/drafts")
def docs_drafts():
    return marker("docs-drafts")


@app.get("/docs/<path:page>")
def docs(page):
    return Response("docs\n", mimetype="text/plain")


@app.get("/internal/metrics")
def internal_metrics():
    return marker("internal-metrics")


@app.get("/admin/users")
def admin_users():
    return marker("admin-users")


@app.get("/account/export")
def account_export():
    return marker("account-export")


@app.get("/account/profile")
def account_profile():
    return Response("account profile\n", mimetype="text/plain")


@app.get("/orders/<int:order_id>")
def order(order_id):
    return Response(f"order {order_id}\n", mimetype="text/plain")


@app.delete("/orders/<int:order_id>")
def delete_order(order_id):
    return marker("orders-delete")


@app.get("/reports/daily")
def reports_daily():
    return marker("reports-daily")


if __name__ == "__main__":
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print(f"listening 127.0.0.1:{server.port}", flush=True)
    lifetime = float(os.environ.get("LIFETIME_SECS", "600"))
    threading.Timer(lifetime, lambda: os._exit(0)).start()
    server.serve_forever()
