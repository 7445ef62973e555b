"""The TreeView's first render in headless Chromium: a big tree / a small one.

No JupyterLab: a page on 127.0.0.1 imports the widget's committed ES module
and calls its ``render({model, el})`` with a tiny fake model holding the
synced state (``snapshot``) that a real ``TreeView`` over a loaded
``Session`` computed.
Each sample is a fresh page (a cold first render); the time runs from the
``render`` call until the SVG is in the DOM. The time to the next painted
frame is kept beside it.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import corpus
from .harness import Row

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><style>%(css)s</style></head>
<body><script type="module">
import widget from "/treeview.js";
window.firstRender = async (name) => {
  const data = await (await fetch("/" + name + ".json")).json();
  const handlers = {};
  const model = {
    state: { snapshot: data },
    get(k) { return this.state[k]; },
    set(k, v) { this.state[k] = v; },
    on(ev, cb) { (handlers[ev] ||= []).push(cb); },
    off(ev, cb) { handlers[ev] = (handlers[ev] || []).filter((f) => f !== cb); },
    send() {},
    save_changes() {},
  };
  const el = document.createElement("div");
  document.body.append(el);
  const t0 = performance.now();
  const found = new Promise((resolve) => {
    if (el.querySelector("svg")) return resolve();
    const mo = new MutationObserver(() => { if (el.querySelector("svg")) { mo.disconnect(); resolve(); } });
    mo.observe(el, { childList: true, subtree: true });
  });
  await widget.render({ model, el });
  if (!el.querySelector("svg")) await found;
  const t1 = performance.now();
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const t2 = performance.now();
  return { dom: t1 - t0, frame: t2 - t0, painted: el.querySelectorAll(".cl-node").length,
           rows: data.nodes.length, markers: (data.markers || []).length };
};
window.ready = true;
</script></body></html>
"""


def widget_state(messages: int) -> tuple[dict, float, int]:
    """The synced ``snapshot`` of a TreeView over a loaded agent session of about
    ``messages`` messages; the seconds the Python side took; the tree's size."""
    import convlab
    from convlab.widgets import TreeView

    path, _info = corpus.cached_log(messages, path_len=100, seed=7)
    s = convlab.Session.load(path)
    t0 = time.perf_counter()
    view = TreeView(s)
    seconds = time.perf_counter() - t0
    data = view.data
    size = len(s.tree)
    view.close()
    s._log.close()
    return data, seconds, size


def _server(files: dict[str, tuple[bytes, str]]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server API)
            body = files.get(self.path.split("?")[0])
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", body[1])
            self.send_header("Content-Length", str(len(body[0])))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body[0])

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def run(smoke: bool) -> Row:
    big_n, small_n = (1_000, 100) if smoke else (5_000, 500)
    row = Row("treeview", f"TreeView first render in headless Chromium: {big_n:,}-node tree / {small_n:,}-node", 12, "<=",
              num_label=f"({big_n:,})", den_label=f"({small_n:,})")
    if not Path(CHROMIUM).exists():
        row.error = f"not available: {CHROMIUM} is missing (make browser)"
        return row
    try:
        from playwright.sync_api import sync_playwright
        import convlab.widgets  # noqa: F401
    except ImportError as err:
        row.error = f"not available: {err}"
        return row
    static = Path(__import__("convlab.widgets", fromlist=["x"]).__file__).parent / "static"
    big, big_py, big_size = widget_state(big_n)
    small, small_py, small_size = widget_state(small_n)
    files = {
        "/index.html": ((PAGE % {"css": (static / "treeview.css").read_text(encoding="utf-8")}).encode(), "text/html"),
        "/treeview.js": ((static / "treeview.js").read_bytes(), "text/javascript"),
        "/big.json": (json.dumps(big).encode(), "application/json"),
        "/small.json": (json.dumps(small).encode(), "application/json"),
    }
    srv = _server(files)
    url = f"http://127.0.0.1:{srv.server_address[1]}/index.html"
    samples: dict[str, list[dict]] = {"big": [], "small": []}
    errors: list[str] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            try:
                ctx = browser.new_context(viewport={"width": 1280, "height": 900})
                order = ["big", "small"]
                for i in range(3 if smoke else 7):
                    for name in order if i % 2 == 0 else order[::-1]:
                        page = ctx.new_page()
                        page.on("pageerror", lambda e: errors.append(str(e)))
                        page.goto(url)
                        page.wait_for_function("window.ready === true")
                        samples[name].append(page.evaluate("(n) => window.firstRender(n)", name))
                        page.close()
            finally:
                browser.close()
    finally:
        srv.shutdown()
        srv.server_close()
    if errors:
        row.error = "page errors: " + "; ".join(errors[:3])
    dom = {k: statistics.median(s["dom"] for s in v) / 1e3 for k, v in samples.items()}
    frame = {k: statistics.median(s["frame"] for s in v) / 1e3 for k, v in samples.items()}
    row.finish(dom["big"], dom["small"])
    b0, s0 = samples["big"][0], samples["small"][0]
    row.note = (f"render() to SVG in DOM, fresh page each; layout rows {b0['rows']} (+{b0['markers']} markers) of {big_size:,} "
                f"messages / {s0['rows']} (+{s0['markers']}) of {small_size:,} (TreeView's default budget), "
                f"painted {b0['painted']} / {s0['painted']} (the view paints its scroll window); to first frame "
                f"{frame['big'] * 1e3:.0f} / {frame['small'] * 1e3:.0f} ms; Python layout {big_py * 1e3:.0f} / {small_py * 1e3:.0f} ms")
    row.extra = {"samples": samples, "python_layout_s": [big_py, small_py], "sizes": [big_size, small_size],
                 "frame_s": [frame["big"], frame["small"]]}
    return row
