"""No piece of a key reaches what convlab writes (issue 40, part 4): a real server on loopback whose errors echo the
key it was sent in pieces (without its ``sk-proj-`` prefix, cut in three), through ``convlab.OpenAIChat``, a
Session's log, the summary cache, ``convlab tune``'s output and CSV, and ``convlab serve``: no run of 12 characters
of the key (``providers.sdk.PIECE_MIN``) anywhere."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import convlab
from convlab.providers import call
from convlab.providers.sdk import PIECE_MIN, redact
from convlab.replaying.summaries import Summaries
from providers_wire import Loopback

#: A key shaped like a real project key (what the server is sent, and must send nowhere else).
KEY = "sk-proj-Zq8R2mX4vN7pL1wK9sT3yB6cHh5Jj7Kk9Ll2Mm4Nn6Pp8"


def pieces_in(text: str) -> list[str]:
    """The runs of PIECE_MIN characters of KEY in ``text``."""
    return [KEY[i:i + PIECE_MIN] for i in range(len(KEY) - PIECE_MIN + 1) if KEY[i:i + PIECE_MIN] in text]


def echoing(path: str, body: object, headers: dict) -> tuple[int, dict]:
    """A server that says back the key it was sent, in pieces: without its prefix, then cut in three; a 400 too
    long for a message that says "long", else a 401."""
    key = headers.get("authorization", "").removeprefix("Bearer ")
    secret = key.removeprefix("sk-proj-")
    text = (f"Incorrect API key provided: {secret}. You can find your API key at https://platform.openai.com "
            f"(pieces: {secret[:14]} {secret[14:28]}-{secret[28:]})")
    said = json.dumps(body)
    if "long" in said:
        return 400, {"error": {"message": "This model's maximum context length is 10 tokens. " + text,
                               "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
    return 401, {"error": {"message": text, "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}


@pytest.fixture
def server():
    with Loopback(echoing) as s:
        yield s


def llm(server) -> convlab.OpenAIChat:
    return convlab.OpenAIChat("gpt-4.1-mini", api_key=KEY, base_url=server.url, max_retries=0)


def test_redact_takes_out_every_run_of_twelve_characters_of_a_key_wherever_it_is():
    assert pieces_in(KEY[8:]) and pieces_in(KEY[3:15])  # the check can fail
    for text in (KEY[8:], f"a{KEY[5:17]}b", f"{KEY[:14]} {KEY[14:28]}-{KEY[28:]}", KEY[20:40] + KEY[10:22], KEY * 2):
        out = redact(text, [KEY])
        assert pieces_in(out) == [] and "***" in out, (text, out)
    short = KEY[30:41]  # 11 characters: no piece, said as it is
    assert redact(f"[{short}]", [KEY]) == f"[{short}]" and redact(KEY.upper(), [KEY]) == KEY.upper()  # case-sensitive
    assert redact("id chatcmpl-0123456789abcdef", ["-"]) == "id chatcmpl-0123456789abcdef"  # a key too short is none


def test_an_error_that_echoes_the_key_in_pieces_holds_no_piece(server):
    with pytest.raises(convlab.ProviderError) as err:
        call(llm(server), {"model": None, "messages": [{"role": "user", "content": "hi"}]})
    assert server.requests[0][2]["authorization"] == f"Bearer {KEY}"  # the server had the key, and echoed it
    assert "Incorrect API key provided" in str(err.value) and pieces_in(str(err.value)) == []
    assert pieces_in(repr(llm(server))) == []


def test_a_session_log_and_its_events_hold_no_piece(server, tmp_path):
    log = tmp_path / "s.jsonl"
    s = convlab.Session(llm=llm(server), log=log)
    s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": "hi"}})
    written = log.read_text()
    assert "Incorrect API key provided" in written  # the error is there, its key is not
    assert pieces_in(written) == [] and pieces_in(json.dumps(s.events)) == []


def test_a_summary_cache_entry_holds_no_piece(server, tmp_path):
    request = {"model": None, "summary": True, "messages": [{"role": "user", "content": "a long text"},
                                                            {"role": "user", "content": "Summarize."}]}
    with pytest.raises(convlab.ProviderError, match="maximum context length"):
        Summaries(llm(server), tmp_path).complete(request)
    (entry,) = tmp_path.rglob("*.json")
    assert json.loads(entry.read_text())["error"] == "too_long" and pieces_in(entry.read_text()) == []


def test_tune_output_warnings_and_csv_hold_no_piece(server, tmp_path, monkeypatch, capsys):
    from convlab.cli import main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "long.jsonl"
    s = convlab.Session(log=path)
    for i in range(4):
        s.submit({"type": "client.message", "agent_id": "bot", "message": {"role": "user", "content": f"question {i} " + "word " * 300}})
    cfg = tmp_path / "c.toml"
    cfg.write_text('[agent.bot.context]\n[[agent.bot.context.strategy]]\nuse = "summarize"\nover_tokens = 600\n')
    csv = tmp_path / "rows.csv"
    code = main(["tune", str(path), "--config", str(cfg), "--summarizer", "openai:gpt-4.1-mini", "--out", str(csv),
                 "--no-progress", "--width", "100"])
    out, err = capsys.readouterr()
    assert code == 3 and server.requests and "Incorrect API key provided" in out + err
    written = out + err + csv.read_text() + "".join(p.read_text() for p in (tmp_path / "xdg").rglob("*") if p.is_file())
    assert pieces_in(written) == []


def test_serve_sends_and_logs_no_piece(server, tmp_path):
    from agui_support import m, run, served

    logs = tmp_path / "logs"
    with served(logs, llm=llm(server)) as (app, srv):
        events = run(srv.url, "t", [m("u1", "hi")])
    assert events[-1]["type"] == "RUN_ERROR" and "Incorrect API key provided" in events[-1]["message"]
    written = json.dumps(events) + "".join(p.read_text() for p in logs.rglob("*") if p.is_file())
    assert pieces_in(written) == []


@given(st.lists(st.tuples(st.text(alphabet=" .,:;!?()", max_size=6), st.integers(0, len(KEY) - PIECE_MIN),
                          st.integers(PIECE_MIN, len(KEY))), max_size=6), st.text(alphabet=" .,:;!?()", max_size=6))
def test_no_piece_of_a_key_survives_redact_however_it_is_cut_and_mixed(parts, tail):
    text = "".join(filler + KEY[start:start + length] for filler, start, length in parts) + tail
    out = redact(text, [KEY])
    assert pieces_in(out) == []
    assert redact(tail, [KEY]) == tail  # a text with no piece is left as it is
