"""Issue 20 (3): no file crashes or exhausts a reader.

Every shape the issue names is a file here: deep but valid trees are read
(without recursion), a hostile shape is a ``ReadError`` naming the file (or, in
JSON lines, a line left out with a ``ReadWarning``), one bad file in a folder
never stops the others, and each is read in a subprocess whose address space
is capped at 1 GB (``RLIMIT_AS``): its peak memory stays under it, and the
outcome is the one expected, never a ``MemoryError``.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab

GB = 1 << 30


# -- the shapes -------------------------------------------------------------------


def _chain(depth: int, opening, closing: str) -> str:
    """JSON text of ``depth`` records each holding the next in a list (built as text: ``json.dumps`` recurses)."""
    return "".join(opening(i) for i in range(depth)) + closing * depth


def librechat_recursive(path: Path, depth: int = 500) -> Path:
    """A LibreChat export whose messages each hold the next as their child: ``depth`` messages, 2 levels each."""
    def opening(i):
        parent = json.dumps(f"m{i - 1}" if i else None)
        return (f'{{"messageId": "m{i}", "parentMessageId": {parent}, "isCreatedByUser": {json.dumps(i % 2 == 0)}, '
                f'"text": "message {i}", "children": [')
    path.write_text('{"conversationId": "deep", "title": "deep", "messages": [' + _chain(depth, opening, "]}") + "]}")
    return path


def oasst_tree(path: Path, depth: int = 900) -> Path:
    """An OpenAssistant tree (one JSON line) whose replies chain ``depth`` messages deep."""
    def opening(i):
        role = "prompter" if i % 2 == 0 else "assistant"
        return f'{{"message_id": "m{i}", "role": "{role}", "text": "message {i}", "replies": ['
    tree = '{"message_tree_id": "t1", "tree_state": "ready_for_export", "prompt": ' + _chain(depth, opening, "]}") + "}"
    small = {"message_tree_id": "t2", "prompt": {"message_id": "p", "role": "prompter", "text": "hi", "replies": []}}
    path.write_text(tree + "\n" + json.dumps(small) + "\n")
    return path


def deep_object(path: Path, depth: int = 1000) -> Path:
    path.write_text('{"a": ' * depth + "1" + "}" * depth)
    return path


def deep_message(path: Path, depth: int = 1000) -> Path:
    """A chat whose tree is shallow but one message's tool input nests ``depth`` levels (the JSON deeper than 400)."""
    arguments = "[" * depth + "]" * depth
    path.write_text('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok", "tool_calls": '
                    '[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": ' + arguments + "}}]}]")
    return path


def claude_code_rows() -> list[dict]:
    return [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hello"}]}},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": "s", "message": {"role": "user", "content": "again"}},
    ]


def transcript_with(path: Path, at: int, line: str) -> Path:
    """A Claude Code transcript with ``line`` as its line ``at + 1``."""
    rows = [json.dumps(r) for r in claude_code_rows()]
    rows.insert(at, line)
    path.write_text("\n".join(rows) + "\n")
    return path


def deep_jsonl_line(path: Path, depth: int = 50_000) -> Path:
    """A Claude Code transcript with one line (a progress row) nested ``depth`` levels deep."""
    return transcript_with(path, 2, '{"type": "progress", "uuid": "p1", "parentUuid": "a1", "sessionId": "s", "data": '
                           + "[" * depth + "]" * depth + "}")


def long_integer(path: Path, digits: int = 5000) -> Path:
    path.write_text('{"messages": [{"role": "user", "content": "hi", "n": ' + "9" * digits + "}]}")
    return path


def long_integer_in_a_line(path: Path, digits: int = 5000) -> Path:
    return transcript_with(path, 1, '{"type": "progress", "uuid": "p1", "sessionId": "s", "n": ' + "9" * digits + "}")


def long_integer_in_an_array(path: Path, digits: int = 5000) -> Path:
    path.write_text('[{"role": "user", "content": "hi", "n": ' + "9" * digits + "}]")
    return path


def nested_arrays(path: Path, size: int = 80_000) -> Path:
    """80 KB of ``[[[...]]]``: 40,000 levels, streamed (it starts with ``[``)."""
    path.write_bytes(b"[" * (size // 2) + b"]" * (size // 2))
    return path


def nested_in_an_object(path: Path, depth: int = 40_000) -> Path:
    path.write_bytes(b'{"messages": ' + b"[" * depth + b"]" * depth + b"}")
    return path


def gzip_bomb(path: Path, inflated: int = 93_000_000) -> Path:
    """A .gz of about 200 KB that inflates to 93 MB of JSON lines (465 times)."""
    line = b'{"role": "user", "content": "' + b"x" * 90 + b'"}\n'
    block = line * 10_000
    with gzip.open(path, "wb", compresslevel=9) as f:
        for _ in range(inflated // len(block)):
            f.write(block)
    return path


def zip_bomb(path: Path, inflated: int = 93_000_000) -> Path:
    block = (b'{"role": "user", "content": "' + b"x" * 90 + b'"}\n') * 10_000
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("conversations.jsonl", "w") as f:
            for _ in range(inflated // len(block)):
                f.write(block)
    return path


# -- what each reads as ----------------------------------------------------------------

#: name -> (make, what reading it gives: ("read", messages, warning or None) or ("refused", the ReadError's text))
SHAPES = {
    "librechat 500 deep": (librechat_recursive, ("read", 500, None)),
    "oasst 900 deep": (oasst_tree, ("read", 901, None)),
    "object 1,000 deep": (deep_object, ("refused", "no importer knows this shape")),
    "a message 1,000 deep": (deep_message, ("read", 2, "JSON cannot carry")),  # cut past 100 levels, and said
    "one JSON line 50,000 deep": (deep_jsonl_line, ("read", 3, "line 3 nests more than 10,000 levels deep (within its first")),
    "a 5,000-digit integer": (long_integer, ("refused", "holds an integer of 5,000 digits")),
    "a 5,000-digit integer in a line": (long_integer_in_a_line, ("read", 3, "line 2 holds an integer of 5,000 digits")),
    "a 5,000-digit integer in an array": (long_integer_in_an_array, ("refused", "holds an integer of 5,000 digits")),
    "80 KB of nested arrays": (nested_arrays, ("refused", "nests more than 10,000 levels deep")),
    "10,000 nested arrays (the cap)": (lambda path: nested_arrays(path, 20_000), ("refused", "no importer knows this shape")),
    "40,000 levels in an object": (nested_in_an_object, ("refused", "nests more than 10,000 levels deep")),
    "a gzip bomb": (gzip_bomb, ("refused", "inflates to more than")),
    "a zip bomb": (zip_bomb, ("refused", "the archive holds no chat log convlab can read (")),
}

SUFFIX = {"oasst 900 deep": ".jsonl", "one JSON line 50,000 deep": ".jsonl", "a 5,000-digit integer in a line": ".jsonl",
          "a gzip bomb": ".jsonl.gz", "a zip bomb": ".zip"}


# -- issue 35: the coding agents' own logs, damaged ---------------------------------------------------


def _agent_lines(path: Path, rows: list[dict], at: int | None = None, line: str | None = None, tail: str = "") -> Path:
    text = [json.dumps(r) for r in rows]
    if line is not None:
        text.insert(len(text) if at is None else at, line)
    path.write_text("\n".join(text) + "\n" + tail)
    return path


def codex_with_a_long_integer(path: Path) -> Path:
    from agent_samples import codex_rows

    return _agent_lines(path, codex_rows({"message": "s"}), 5, '{"timestamp": "t", "type": "event_msg", "payload": {"n": ' + "9" * 5000 + "}}")


def codex_cut_mid_line(path: Path) -> Path:
    from agent_samples import codex_rows

    return _agent_lines(path, codex_rows({"message": "s"}), tail='{"timestamp": "2025-09-19T09:00:11Z", "type": "response_it')


def codex_of_unknown_roles(path: Path) -> Path:
    """A rollout the format almost fits: every input of a role Codex does not write (and the summary kept none)."""
    from agent_samples import codex_rows

    rows = codex_rows({"message": "s", "replacement_history": []})
    for r in rows:
        if r["payload"].get("role") == "user":
            r["payload"]["role"] = "critic"
    return _agent_lines(path, rows)


def pi_with_a_deep_line(path: Path) -> Path:
    from agent_samples import pi_v3_rows

    deep = '{"type": "custom", "id": "deep", "parentId": "a3", "customType": "x", "data": ' + "[" * 50_000 + "]" * 50_000 + "}"
    return _agent_lines(path, pi_v3_rows(), line=deep)


def pi_with_lone_surrogates(path: Path) -> Path:
    from agent_samples import pi_v3_rows

    rows = pi_v3_rows()
    rows[1]["message"]["content"][0]["text"] = "SURROGATE"
    path.write_text("\n".join(json.dumps(r) for r in rows).replace("SURROGATE", "\\ud800 half a pair") + "\n")
    return path


def gemini_with_deep_arguments(path: Path, depth: int = 1000) -> Path:
    path.write_text('{"sessionId": "g", "projectHash": "h", "startTime": "2025-10-01T10:00:00Z", "messages": ['
                    '{"id": "u", "type": "user", "timestamp": "2025-10-01T10:00:01Z", "content": "hi"}, '
                    '{"id": "g1", "type": "gemini", "timestamp": "2025-10-01T10:00:02Z", "content": "", "toolCalls": '
                    '[{"id": "c1", "name": "f", "status": "success", "args": {"a": ' + "[" * depth + "]" * depth + "}}]}]}")
    return path


def copilot_cut_mid_line(path: Path) -> Path:
    rows = [{"type": "session.start", "id": "e0", "parentId": None, "timestamp": "2026-04-23T17:00:00Z",
             "data": {"sessionId": "cp", "copilotVersion": "1.0.34"}},
            {"type": "user.message", "id": "e1", "parentId": "e0", "timestamp": "2026-04-23T17:00:01Z", "data": {"content": "hi"}},
            {"type": "assistant.message", "id": "e2", "parentId": "e1", "timestamp": "2026-04-23T17:00:02Z",
             "data": {"messageId": "m", "content": "hello", "outputTokens": 3}}]
    return _agent_lines(path, rows, tail='{"type": "assistant.turn_end", "id": "e3", "par')


SHAPES.update({
    "a Codex rollout with a 5,000-digit integer in a line": (codex_with_a_long_integer, ("read", 10, "holds an integer of 5,000 digits")),
    "a Codex rollout cut mid-line": (codex_cut_mid_line, ("read", 10, "the last line (17) is cut short")),
    "a Codex rollout of inputs of an unknown role": (codex_of_unknown_roles, ("refused", "does not read as codex: no user message was left")),
    "a pi session with a line 50,000 deep": (pi_with_a_deep_line, ("read", 14, "nests more than 10,000 levels deep")),
    "a pi session holding a lone surrogate": (pi_with_lone_surrogates, ("read", 14, "JSON cannot carry")),
    "a Gemini recording whose tool arguments nest 1,000 deep": (gemini_with_deep_arguments, ("read", 2, "JSON cannot carry")),
    "a Copilot events file cut mid-line": (copilot_cut_mid_line, ("read", 2, "the last line (4) is cut short")),
})
SUFFIX.update({name: ".jsonl" for name in SHAPES if name.startswith(("a Codex", "a pi", "a Copilot"))})


def make(name: str, folder: Path) -> Path:
    stem = name.replace(" ", "-").replace(",", "")
    return SHAPES[name][0](folder / (stem + SUFFIX.get(name, ".json")))


READER = textwrap.dedent("""
    import json, resource, sys, warnings
    resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
    import convlab
    out = {{}}
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            convs = convlab.read(sys.argv[1], progress=False)
            out["read"] = sum(len(c) for c in convs)
        except convlab.ReadError as err:
            out["refused"] = str(err)
    out["warnings"] = [str(w.message) for w in said]
    out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(out))
""")


def read_capped(path: Path, cap: int = GB) -> dict:
    """``convlab.read(path)`` in a subprocess whose address space is capped at ``cap`` bytes: what it did."""
    done = subprocess.run([sys.executable, "-c", READER.format(cap=cap), str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", SHAPES)
def test_each_hostile_shape_is_read_or_refused_under_1_gb(name, tmp_path):
    """Issue 20: "Test that peak memory stays under 1 GB for each hostile shape, in a subprocess with RLIMIT_AS"."""
    path = make(name, tmp_path)
    got = read_capped(path)
    outcome = SHAPES[name][1]
    assert got["peak"] < GB
    if outcome[0] == "read":
        assert got.get("read") == outcome[1], got
        if outcome[2] is not None:
            assert any(outcome[2] in w for w in got["warnings"]), got["warnings"]
    else:
        assert "refused" in got, got
        assert got["refused"].startswith(str(path)) and outcome[1] in got["refused"], got["refused"]
        assert "memory" not in got["refused"]


def test_a_folder_of_every_hostile_shape_reads_the_good_files_and_names_the_others(tmp_path):
    """Issue 20: "In a folder, one bad file never stops the others"."""
    for name in SHAPES:
        make(name, tmp_path)
    (tmp_path / "good.json").write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    got = read_capped(tmp_path)
    readable = sum(outcome[1] for _, outcome in SHAPES.values() if outcome[0] == "read")
    assert got["read"] == readable + 2 and got["peak"] < GB
    refused = [n for n, (_, outcome) in SHAPES.items() if outcome[0] == "refused" and "no importer knows" not in outcome[1]]
    passed_over = [w for w in got["warnings"] if w.endswith("; passed over")]
    assert len(passed_over) == len(refused), passed_over


def test_the_limits_are_parameters(tmp_path):
    """max_depth and max_inflated: documented defaults, and a parameter (deeper, or less, on request)."""
    deep = nested_in_an_object(tmp_path / "deep.json", depth=12_000)
    with pytest.raises(convlab.ReadError, match=r"nests more than 10,000 levels deep .*read\(max_depth=\) reads deeper"):
        convlab.read(deep, progress=False)
    with pytest.raises(convlab.ReadError, match="no importer knows this shape"):  # read: it is just not a chat log
        convlab.read(deep, progress=False, max_depth=20_000)
    small = librechat_recursive(tmp_path / "chain.json", depth=60)
    with pytest.raises(convlab.ReadError, match="nests more than 100 levels deep"):
        convlab.read(small, progress=False, max_depth=100)
    gz = tmp_path / "chat.jsonl.gz"
    gz.write_bytes(gzip.compress(b'{"role": "user", "content": "hi"}\n' * 1000))
    assert len(convlab.read(gz, progress=False)[0]) == 1000
    with pytest.raises(convlab.ReadError, match=r"chat\.jsonl\.gz: inflates to more than 1,000 bytes from \d+ \(read\(max_inflated=\)"):
        convlab.read(gz, progress=False, max_inflated=1000)
    with pytest.raises(ValueError, match="max_depth must be a positive whole number, got 0"):
        convlab.read(gz, max_depth=0)


def test_deep_trees_are_the_trees_they_are(tmp_path):
    [c] = convlab.read(librechat_recursive(tmp_path / "chain.json", depth=2000), progress=False)
    assert len(c) == 2000 and c.head == "m1999" and len(c.path()) == 2000
    assert c.tree.nodes["m1500"]["parent"] == "m1499"
    deep, small = convlab.read(oasst_tree(tmp_path / "t.jsonl", depth=3000), progress=False)
    assert len(deep) == 3000 and deep.head == "m2999" and len(small) == 1

    def opening(i):
        return f'{{"id": "m{i}", "parentMessageId": {json.dumps(f"m{i - 1}" if i else None)}, "role": "user", "content": "{i}", "children": ['
    generic = tmp_path / "generic.json"
    generic.write_text('{"messages": [' + _chain(3000, opening, "]}") + "]}")
    [c] = convlab.read(generic, progress=False)
    assert (c.format, len(c), c.head) == ("generic", 3000, "m2999")


def test_a_json_line_holding_a_line_separator_is_one_line(tmp_path):
    """JSON lines are split at line feeds only: JSON strings may hold U+2028, U+2029 and U+0085 as they are
    (json.dumps(ensure_ascii=False) writes them so), and splitting there cut a message in two."""
    rows = claude_code_rows()
    rows[0]["message"]["content"] = "one\u2028two\u2029three\x85four\x0cfive"
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [c] = convlab.read(p, progress=False)
    assert len(c) == 3 and c.tree.nodes["u1"]["content"] == "one\u2028two\u2029three\x85four\x0cfive"


@pytest.mark.parametrize("levels", [350, 700, 990, 5_000])
def test_json_read_first_or_measured_first_reads_the_same(levels):
    """Where the cap is past json's recursion, json reads first and the text is measured only if it could not
    (documents._parsed): the value is the one the non-recursive reader gives, at every depth either side of SHALLOW
    and of the recursion limit."""
    from convlab.importers import documents, jsontext

    def spine(value):  # the nesting walked down, without recursion (== on such lists recurses)
        n = 0
        while isinstance(value, list):
            assert len(value) == 1
            value, n = value[0], n + 1
        return n, value

    text = "[" * levels + '"x"' + "]" * levels
    assert spine(documents._parsed(text, 10_000, 10_000)) == spine(jsontext.loads(text, 10_000)) == (levels, "x")
    with pytest.raises(jsontext.TooDeep, match=f"nests more than {levels - 1:,} levels deep"):
        documents._parsed(text, levels - 1, levels - 1)


def test_a_program_that_raised_the_recursion_limit_still_reads_deep_json_without_recursion():
    """json recurses in C as deep as Python's recursion limit lets it: past documents._JSON_RECURSION the text is
    measured first, and a deep one read by the non-recursive reader (in a subprocess: a crash would be a segfault)."""
    code = textwrap.dedent("""
        import sys
        sys.setrecursionlimit(200_000)
        from convlab.importers import documents
        depth = 150_000
        value = documents._parsed("[" * depth + "]" * depth, 200_000, 200_000)
        n = 0
        while value:
            value, n = value[0], n + 1
        print(n)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "149999"


_LINE = st.one_of(
    st.dictionaries(st.text(max_size=3), st.one_of(st.text(max_size=8), st.integers(), st.none()), max_size=3).map(
        lambda d: json.dumps(d, ensure_ascii=False).encode()),
    st.sampled_from([b"", b"  \t", "\u00a0\u3000".encode(), b"{not json", b"\xff\xfe", b"[1, 2]", b"7", b'{"a": NaN}',
                     b'{"s": "\\ud800 lone"}', b'{"deep": ' + b"[" * 450 + b"]" * 450 + b"}", b"{}",
                     b'{"big": 1' + b"0" * 5000 + b"}", "{\"é\": \"\u2028\"}".encode(), b"{\"torn\": \"x"]),
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_LINE, max_size=8), bom=st.booleans(), crlf=st.booleans(),
       end=st.sampled_from([b"", b"\n", b"\r\n", " \u00a0".encode(), b"\n\n  "]))
def test_json_lines_split_as_bytes_read_as_the_decoded_text_does(lines, bom, crlf, end):
    """JSON lines are split as bytes and each line decoded (``documents._byte_lines``) where that reads what the
    decoded text would: the same kind, records, left-out lines and errors as the text read whole, whatever the
    lines hold (blank ones, Unicode white space, bytes that are not UTF-8, NaN, a lone surrogate, deep or long
    values, a torn last line), with or without a BOM, CRLF, and white space at the end."""
    import warnings
    from unittest import mock

    from convlab.importers import documents

    raw = (b"\xef\xbb\xbf" if bom else b"") + (b"\r\n" if crlf else b"\n").join(lines) + end

    def outcome():
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                doc = documents.parse_bytes(raw, "f.jsonl", False)
            except convlab.ReadError as err:
                return "ReadError", str(err)
            except documents.NotJSON as err:
                return "NotJSON", str(err)
        return doc.kind, _spines(doc.head), doc._problem, [str(w.message) for w in said]

    got = outcome()
    with mock.patch.object(documents, "_byte_lines", lambda raw, depth: None):
        want = outcome()
    assert got == want


def _spines(value):
    """``value`` with NaN made comparable and deep lists made their depth (== on them would recurse)."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, list):
        n, inner = 0, value
        while isinstance(inner, list) and len(inner) == 1 and isinstance(inner[0], list):
            inner, n = inner[0], n + 1
        return ("deep", n) if n > 10 else [_spines(v) for v in value]
    if isinstance(value, dict):
        return {k: _spines(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("body", [b'{"a": 1}\n{"b": "\xff"}\n', b'{"a": "\xff"}'])
def test_text_that_is_not_utf8_is_named_by_its_byte_in_the_file_past_a_bom(tmp_path, body):
    """The byte named is the file's own, counted from its start, a BOM included (JSON lines and one value alike)."""
    p = tmp_path / "f.json"
    raw = b"\xef\xbb\xbf" + body
    bad = raw.index(bytes([0xff]))
    p.write_bytes(raw)
    with pytest.raises(convlab.ReadError, match=rf"not UTF-8 text \(byte {bad}\)"):
        convlab.read(p)
