"""The server trusts no one it should not (issue 19, part 3): Host and Origin checks, JSON only,
never a 500 or an empty 200, reads that never wait for a turn, bounded connections, registry
and count. Each class of attack gets its own test, on a real uvicorn on 127.0.0.1.

The full disk (part 2's server side) is in tests/test_agui_disk.py."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

import convlab
from agui_support import SlowLLM, body, client, m, reply_of, run, served, serving, snapshot, sse, types
from convlab.agui import gate
from convlab.tokens import RUN_PIECE, get_encoding

pytestmark = pytest.mark.timeout(120)

JSON = {"Content-Type": "application/json"}


def files(log_dir: Path) -> list[str]:
    return sorted(p.name for p in log_dir.iterdir() if p.name != ".convlab-serve.lock")


# -- Host and Origin --------------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                                          None, "application/jsonp", "text/json"])
def test_a_run_needs_content_type_json_or_it_gets_415_and_writes_nothing(tmp_path, content_type):
    """"POST requires Content-Type: application/json": the simple requests a page may send cross-site
    without a preflight (text/plain, a form) never start a run."""
    logs = tmp_path / "logs"
    with served(logs) as (app, server), client() as c:
        headers = {"Content-Type": content_type} if content_type else {}
        r = c.post(server.url, content=json.dumps(body("csrf", [m("u1", "hi")])), headers=headers)
        assert r.status_code == 415, r.text
        assert "Content-Type: application/json" in r.json()["error"]
        ok = c.post(server.url, content=json.dumps(body("fine", [m("u1", "hi")])),
                    headers={"Content-Type": "Application/JSON; charset=utf-8"})
        assert ok.status_code == 200 and "RUN_FINISHED" in ok.text
    assert files(logs) == ["fine.jsonl"]


@pytest.mark.parametrize("method,path", [("POST", ""), ("GET", "threads"), ("GET", "threads/t"), ("GET", ""),
                                         ("GET", "health"), ("OPTIONS", "")])
def test_an_origin_that_is_neither_the_servers_nor_named_gets_403(tmp_path, method, path):
    """"A request with an Origin that is neither the server's own nor one --cors-origin names gets 403"."""
    logs = tmp_path / "logs"
    with served(logs, cors_origins=["http://chat.example:5173"]) as (app, server), client() as c:
        run(server.url, "t", [m("u1", "hi")])
        size = (logs / "t.jsonl").stat().st_size
        port = server.port
        kwargs = {"json": body("t", [m("u1", "hi"), m(None, "more")])} if method == "POST" else {}
        for origin in ["http://evil.example", "null", f"http://localhost:{port}", "http://chat.example",
                       "https://chat.example:5173", f"http://127.0.0.1:{port}.evil.example"]:
            r = c.request(method, server.url + path, headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
                          **kwargs)
            assert r.status_code == 403, (origin, r.status_code, r.text)
            assert origin in r.json()["error"] and "--cors-origin" in r.json()["error"]
            assert "access-control-allow-origin" not in r.headers
        # the server's own page and the named origin pass
        own = c.request(method, server.url + path, headers={"Origin": f"http://127.0.0.1:{port}"}, **kwargs)
        named = c.request(method, server.url + path, headers={"Origin": "http://chat.example:5173",
                                                              "Access-Control-Request-Method": "POST"}, **kwargs)
        assert own.status_code != 403 and named.status_code != 403, (own.text, named.text)
        assert named.headers["access-control-allow-origin"] == "http://chat.example:5173"
    grew = (logs / "t.jsonl").stat().st_size > size
    assert grew == (method == "POST"), "only the two allowed POSTs wrote"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "localhost.evil.example:{port}",
                                  "127.0.0.1.nip.io:{port}", "10.0.0.1:{port}", "[::2]:{port}"])
def test_a_host_that_is_not_this_server_gets_421_dns_rebinding(tmp_path, host):
    """"A Host that is not the bound address, localhost, 127.0.0.1, [::1] or one --allowed-host names gets
    421": a page whose name rebinds to 127.0.0.1 reads no thread and runs nothing."""
    logs = tmp_path / "logs"
    with served(logs) as (app, server), client() as c:
        run(server.url, "t", [m("u1", "a secret")])
        header = host.format(port=server.port)
        for method, path in [("GET", "threads"), ("GET", "threads/t"), ("GET", ""), ("POST", "")]:
            kwargs = {"json": body("t2", [m("u1", "hi")])} if method == "POST" else {}
            r = c.request(method, server.url + path, headers={"Host": header}, **kwargs)
            assert r.status_code == 421, (method, path, r.status_code)
            assert "--allowed-host" in r.json()["error"] and "secret" not in r.text
        for fine in [f"localhost:{server.port}", f"127.0.0.1:{server.port}", f"[::1]:{server.port}", "LOCALHOST"]:
            assert c.get(server.url + "threads", headers={"Host": fine}).json() == {"threads": ["t"]}, fine
    assert files(logs) == ["t.jsonl"]


def test_allowed_host_names_more_hosts(tmp_path):
    with served(tmp_path, allowed_hosts=["chat.lan", "[fd00::1]"]) as (app, server), client() as c:
        for host in ["chat.lan", f"chat.lan:{server.port}", "CHAT.LAN", f"[fd00::1]:{server.port}"]:
            assert c.get(server.url + "health", headers={"Host": host}).status_code == 200, host
        assert c.get(server.url + "health", headers={"Host": "other.lan"}).status_code == 421


def test_the_bound_address_is_a_host_the_server_answers_to():
    """On an address that is not loopback (or a wildcard bind), the address the connection came in on is
    the server's own: the Gate reads it from the ASGI scope's ``server``."""
    seen = []

    async def inner(scope, receive, send):
        seen.append(scope["path"])

    checked = gate.Gate(inner)

    def call(host: str, server: tuple[str, int]) -> int | None:
        sent = []

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": "/threads", "server": server, "scheme": "http",
                 "headers": [(b"host", host.encode())], "query_string": b""}
        # in a thread of its own: a test may run while another holds an event loop in this one (Playwright's
        # sync API keeps one running for the browser tests' session)
        worker = threading.Thread(target=asyncio.run, args=(checked(scope, None, send),))
        worker.start()
        worker.join(30)
        assert not worker.is_alive()
        return sent[0]["status"] if sent else None

    assert call("192.168.7.5:8000", ("192.168.7.5", 8000)) is None
    assert call("[fd00::5]:8000", ("fd00::5", 8000)) is None
    assert call("192.168.7.6:8000", ("192.168.7.5", 8000)) == 421
    assert call("myhost:8000", ("192.168.7.5", 8000)) == 421
    assert seen == ["/threads", "/threads"]


def test_cli_allowed_host_and_cors_origin(tmp_path):
    """`convlab serve --allowed-host NAME --cors-origin ORIGIN`, and the obvious mistakes refused at once."""
    with serving(tmp_path / "logs", "--allowed-host", "chat.lan", "--cors-origin", "http://ui.lan:3000") as srv, \
            client() as c:
        assert c.get(srv.url + "threads", headers={"Host": "chat.lan"}).status_code == 200
        assert c.get(srv.url + "threads", headers={"Host": "evil.lan"}).status_code == 421
        assert c.get(srv.url + "threads", headers={"Origin": "http://ui.lan:3000"}).status_code == 200
        assert c.get(srv.url + "threads", headers={"Origin": "http://evil.lan"}).status_code == 403
    for args, says in [(["--cors-origin", "localhost:5173"], "scheme://host"),
                       (["--allowed-host", "http://chat.lan/"], "no scheme")]:
        out = convlab_cli(tmp_path / "x", *args)
        assert out.returncode == 2 and says in out.stderr, out.stderr


def convlab_cli(log_dir: Path, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "convlab.cli", "serve", "--log-dir", str(log_dir), "--port", "0",
                           *args], capture_output=True, text=True, timeout=60)


# -- never a 500 or an empty 200 ----------------------------------------------------------------------

def raw_post(c, url: str, raw: str | bytes):
    return c.post(url, content=raw, headers=JSON)


def deep(n: int) -> str:
    return json.dumps(body("deep", [m("u1", "hi")])).replace('"state": {}', '"state": {"x": ' + "[" * n + "]" * n + "}")


def with_state(raw: str) -> str:
    """A run's body whose state holds ``raw`` as it is (JSON text no encoder writes)."""
    return json.dumps(body("t", [m("u1", "hi")])).replace('"state": {}', '"state": {"x": ' + raw + "}")


BAD_BODIES = {
    "64 emoji thread id": (json.dumps(body("\U0001F600" * 64, [m("u1", "hi")])), "262 bytes"),
    "a lone surrogate in the thread id": (json.dumps(body("t\ud800", [m("u1", "hi")])), "lone surrogate"),
    "a lone surrogate in content": (json.dumps(body("t", [m("u1", "hi \udc00")])), "body.messages[0].content: a lone surrogate"),
    "a lone surrogate in state": (json.dumps(body("t", [m("u1", "hi")], state={"k\ud83d": 1})), "body.state: key"),
    "nested 1,000 deep": (deep(1000), "deeper than 100"),
    "nested 101 deep": (deep(100), "deeper than 100"),
    "NaN in state": (with_state("NaN"), "body.state.x: nan is not a JSON number"),
    "Infinity in state": (with_state("-Infinity"), "body.state.x: -inf is not"),
    "1e400": (with_state("1e400"), "body.state.x: inf is not"),
    "a 5,000-digit integer": (with_state("9" * 5000), "digits"),
    "a 20-digit integer": (with_state("9" * 20), "at most 64 bits"),
    "not UTF-8": (b'{"threadId": "\xff\xfe"}', "not JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_a_body_no_json_reader_can_carry_is_400_before_any_file_is_touched(tmp_path, case):
    raw, says = BAD_BODIES[case]
    logs = tmp_path / "logs"
    with served(logs) as (app, server), client() as c:
        r = raw_post(c, server.url, raw)
        assert r.status_code == 400 and says in r.json()["error"], (r.status_code, r.text)
        assert r.headers["content-type"] == "application/json"
        assert run(server.url, "t", [m("u1", "hi")])[-1]["type"] == "RUN_FINISHED"  # the server goes on
        assert repr(app).endswith("threads=1)")
    assert files(logs) == ["t.jsonl"]


def test_a_deep_body_within_the_limit_runs(tmp_path):
    with served(tmp_path) as (app, server), client() as c:
        r = raw_post(c, server.url, deep(90))
        assert r.status_code == 200 and "RUN_FINISHED" in r.text


@pytest.mark.parametrize("path", ["threads/" + "%F0%9F%98%80" * 64, "threads/t%ED%A0%80", "threads/%FF%FE"])
def test_a_thread_id_no_file_can_have_is_400_on_get(tmp_path, path):
    with served(tmp_path) as (app, server), client() as c:
        r = c.get(server.url + path)
        assert r.status_code == 400 and r.json()["error"].startswith("threadId"), r.text
        assert repr(app).endswith("threads=0)")


def test_unknown_routes_and_methods_are_json(tmp_path):
    with served(tmp_path) as (app, server), client() as c:
        for method, path, status in [("GET", "nope", 404), ("DELETE", "threads/t", 405), ("PUT", "", 405)]:
            r = c.request(method, server.url + path)
            assert r.status_code == status and "no such route" in r.json()["error"]


def damage(logs: Path, name: str, how: str) -> int | None:
    """Damage ``logs/name.jsonl`` (a good log of two turns) ``how``; the line the error must name."""
    path = logs / f"{name}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    if how == "a bad middle line":
        path.write_bytes(b"".join(lines[:3] + [b'{"seq": 4, "type": \n'] + lines[3:]))
        return 4
    if how == "a middle line that is not an object":
        path.write_bytes(b"".join(lines[:2] + [b"[1, 2, 3]\n"] + lines[2:]))
        return 3
    if how == "blank":
        path.write_bytes(b"\n   \n\n")
        return 1
    if how == "binary":
        path.write_bytes(bytes(range(256)) * 40)
        return 1
    if how == "binary in the middle":
        path.write_bytes(b"".join(lines[:2] + [b"\x00\xff\xfe\x00\n"] + lines[2:]))
        return 3
    if how == "a directory":
        path.unlink()
        path.mkdir()
        return None
    if how == "a symlink":
        path.unlink()
        os.symlink("/etc/hostname", path)
        return None
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["a bad middle line", "a middle line that is not an object", "blank", "binary",
                                 "binary in the middle", "a directory", "a symlink"])
def test_a_damaged_thread_log_is_a_json_error_naming_the_thread_and_the_line(tmp_path, how):
    """GET: a JSON 409 naming the thread and the line; POST: RUN_ERROR saying the same; nothing written;
    the other threads and the listing go on."""
    logs = tmp_path / "logs"
    with served(logs) as (app, server):
        history = [m("u1", "hi")]
        history.append(reply_of(run(server.url, "bad", history)))
        run(server.url, "bad", history + [m("u2", "again")])
        run(server.url, "good", [m("u1", "hi")])
    line = damage(logs, "bad", how)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in logs.glob("*.jsonl") if not p.is_dir())
    with served(logs) as (app, server), client() as c:
        r = c.get(server.url + "threads/bad")
        assert r.status_code == 409, r.text
        err = r.json()
        assert err["thread"] == "bad" and err["line"] == line and "'bad'" in err["error"]
        if line is not None:
            assert f"line {line}" in err["error"]
        else:
            assert how.split()[-1] in err["error"]
        assert str(logs) not in err["error"], "the server's own paths stay on the server"
        got = run(server.url, "bad", [m("u9", "hello?")])
        assert types(got) == ["RUN_ERROR"] and got[0]["code"] == "409"
        assert got[0]["metadata"] == {"status": 409, "thread": "bad", "line": line}
        assert got[0]["message"] == err["error"]
        assert c.get(server.url + "threads").json() == {"threads": ["bad", "good"]}
        assert snapshot(server.url, "good")["head"] == "e1"
    after = sorted((p.name, p.stat().st_mtime_ns) for p in logs.glob("*.jsonl") if not p.is_dir())
    assert before == after, "nothing was written"


def test_a_blank_line_in_the_middle_is_not_damage(tmp_path):
    logs = tmp_path / "logs"
    with served(logs) as (app, server):
        run(server.url, "t", [m("u1", "hi")])
    path = logs / "t.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2] + [b"\n"] + lines[2:]))
    with served(logs) as (app, server):
        assert snapshot(server.url, "t")["head"] == "e1"


def test_a_file_name_that_is_not_utf8_is_left_out_of_the_listing(tmp_path):
    logs = tmp_path / "logs"
    with served(logs) as (app, server), client() as c:
        run(server.url, "t", [m("u1", "hi")])
        with open(os.path.join(os.fsencode(logs), b"\xff\xfe-odd.jsonl"), "wb") as f:
            f.write(b"{}\n")
        r = c.get(server.url + "threads")
        assert r.status_code == 200 and r.json() == {"threads": ["t"]}


def test_a_served_process_prints_no_traceback_for_any_client_input(tmp_path):
    """"Uvicorn never prints a traceback for a client's input": every case above, against `convlab serve`."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "dir.jsonl").mkdir()
    (logs / "bin.jsonl").write_bytes(bytes(range(256)) * 4)
    os.symlink("/etc/hostname", logs / "link.jsonl")
    with serving(logs) as srv, client() as c:
        for raw, _ in BAD_BODIES.values():
            assert raw_post(c, srv.url, raw).status_code == 400
        for name in ["dir", "bin", "link"]:
            assert c.get(srv.url + f"threads/{name}").status_code == 409
            assert types(run(srv.url, name, [m("u1", "hi")])) == ["RUN_ERROR"]
        assert c.post(srv.url, content=b"{", headers={"Content-Type": "text/plain"}).status_code == 415
        assert c.get(srv.url + "threads", headers={"Host": "evil.example"}).status_code == 421
        assert c.get(srv.url + "threads", headers={"Origin": "http://evil.example"}).status_code == 403
        for path in ["threads/%FF", "threads/" + "x" * 300, "threads/..%2F..%2Fetc"]:
            assert c.get(srv.url + path).status_code in (400, 404)
        with socket.create_connection((srv.url.split("//")[1].split(":")[0], int(srv.url.rsplit(":", 1)[1][:-1]))) as s:
            s.sendall(b"GARBAGE \x00\xff HTTP/9\r\n\r\n")
            s.recv(1000)
        assert run(srv.url, "fine", [m("u1", "hi")])[-1]["type"] == "RUN_FINISHED"
        output = srv.output()
    assert "Traceback" not in output and "Exception in ASGI application" not in output, output


# -- reads never wait for a running turn ---------------------------------------------------------------

def test_reads_answer_from_the_last_applied_state_while_a_reply_streams(tmp_path):
    """"GET /threads/{id} answers from the last applied state within milliseconds, with running", while a
    4-second reply streams (before: it waited for the turn, 4.0 s)."""
    slow = SlowLLM(pause=0.5, pieces=8)
    with served(tmp_path, llm=slow) as (app, server), client() as c:
        slow.pause = 0.0
        a1 = reply_of(run(server.url, "t", [m("u1", "first")]))
        slow.pause = 0.5
        with client() as streaming, streaming.stream("POST", server.url, json=body("t", [m("u1", "first"), a1,
                                                                                          m("u2", "second")])) as r:
            lines = r.iter_lines()
            started = time.monotonic()
            for ev in sse(lines):
                if ev["type"] == "TEXT_MESSAGE_CONTENT":
                    break
            took = []
            for _ in range(5):
                t0 = time.monotonic()
                snap = c.get(server.url + "threads/t").json()
                took.append(time.monotonic() - t0)
                assert snap["running"] is not None and [n["id"] for n in snap["nodes"]] == ["u1", "e1", "u2"]
                listing = c.get(server.url + "threads").json()
                assert listing == {"threads": ["t"]}
            during = time.monotonic() - started
            rest = list(sse(lines))
        assert rest[-1]["type"] == "RUN_FINISHED"
        after = c.get(server.url + "threads/t").json()
    assert during < 2.0, f"five reads took {during:.2f} s of a 4 s reply"
    assert max(took) < 0.5, took
    assert after["running"] is None and after["head"] == "e2"


# -- bounded ------------------------------------------------------------------------------------------

def connect(server) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return s


def closed_within(s: socket.socket, seconds: float) -> tuple[float, bytes]:
    """Read until the server closes the connection; how long it took and what it sent."""
    start = time.monotonic()
    got = b""
    s.settimeout(seconds)
    while True:
        try:
            chunk = s.recv(4096)
        except socket.timeout:
            raise AssertionError(f"the connection was still open after {seconds} s") from None
        except ConnectionResetError:
            break
        if not chunk:
            break
        got += chunk
    return time.monotonic() - start, got


def test_a_slow_header_connection_times_out(tmp_path):
    """Slowloris: a header byte every 0.2 s keeps no connection past the header deadline (1 s here)."""
    app = convlab.agui.app(tmp_path)
    try:
        from convlab import agui

        with agui.start(app, header_timeout=1.0) as server, connect(server) as idle, connect(server) as slow:
            # (idle sends nothing at all)
            slow.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            start = time.monotonic()
            try:
                while time.monotonic() - start < 5:
                    slow.sendall(b"X")
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass
            took = time.monotonic() - start
            _, said = closed_within(slow, 5)
            idle_took, idle_said = closed_within(idle, 5)
            # a client that sends its request in time is served, and its keep-alive connection too
            with client() as c:
                assert c.get(server.url + "health").status_code == 200
                time.sleep(1.3)
                assert c.get(server.url + "health").status_code == 200
    finally:
        app.close()
    assert took < 3.0, f"the slow connection lasted {took:.1f} s"
    assert said.startswith(b"HTTP/1.1 408"), said
    assert idle_said.startswith(b"HTTP/1.1 408") and idle_took < 3.0


def test_a_slow_body_times_out_with_408(tmp_path):
    """A body that trickles in (two bytes every 0.2 s) gets 408 at the body deadline (1 s here) and writes nothing."""
    logs = tmp_path / "logs"
    with served(logs, body_timeout=1.0) as (app, server), connect(server) as s:
        raw = json.dumps(body("t", [m("u1", "hi")])).encode()
        s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(raw))
        start = time.monotonic()
        s.setblocking(False)
        said = b""
        for i in range(0, len(raw) - 1, 2):
            if time.monotonic() - start > 5:
                break
            try:
                s.sendall(raw[i:i + 2])
                said += s.recv(4096)
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                break
            if said:
                break
            time.sleep(0.2)
        took = time.monotonic() - start
        s.setblocking(True)
        said += closed_within(s, 5)[1]
    assert took < 3.0, f"the slow body lasted {took:.1f} s"
    assert said.split(b"\r\n")[0].startswith(b"HTTP/1.1 408") and b"did not arrive within 1 s" in said, said
    assert files(logs) == []


def test_reads_of_threads_that_do_not_exist_do_not_grow_the_registry(tmp_path):
    """"A GET for a thread that does not exist does not grow the registry: 5,000 of them added 3.7 MB"."""
    with served(tmp_path) as (app, server), client() as c:
        run(server.url, "real", [m("u1", "hi")])
        for i in range(5000):
            assert c.get(server.url + f"threads/nope-{i}").status_code == 404
        assert repr(app).endswith("threads=1)")
        assert c.get(server.url + "threads").json() == {"threads": ["real"]}
    assert files(tmp_path) == ["real.jsonl"]


def test_a_10_mb_body_of_one_character_is_counted_in_pieces(tmp_path, monkeypatch):
    """The echo counts its input and its reply exactly (convlab.count_tokens). tiktoken alone takes about
    a minute of CPU on 10 MB of one letter (quadratic in one pre-token); the count cuts such a run in
    pieces (convlab/tokens.py), so no text tiktoken is handed on the way, parse to reply, is longer than
    the pieces (no timing here: what tiktoken is given is what makes it slow)."""
    encoding = get_encoding("o200k_base")
    handed: list[int] = []
    one, batch = encoding.encode_ordinary, encoding.encode_ordinary_batch
    monkeypatch.setattr(encoding, "encode_ordinary", lambda text: handed.append(len(text)) or one(text))
    monkeypatch.setattr(encoding, "encode_ordinary_batch",
                        lambda texts, **kw: handed.extend(map(len, texts)) or batch(texts, **kw))
    text = "a" * (10 * 1024 * 1024 - 2000)
    with served(tmp_path) as (app, server):
        events = run(server.url, "big", [m("u1", text)])
        s = app.session("big")
    assert events[-1]["type"] == "RUN_FINISHED"
    assert s.path()[-1]["usage"]["input_tokens"] == convlab.count_tokens(text) == len(text) // 8
    assert handed and max(handed) <= RUN_PIECE, f"tiktoken was handed {max(handed):,} characters at once"
