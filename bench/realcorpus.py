"""A corpus of real logs, per format: the shared real chat logs and coding-agent sessions, copied up to a size.

The sources are the real logs nobody here wrote: ``$CONVLAB_REAL_LOGS`` (else
``../shared/data/real``) and ``$CONVLAB_AGENT_LOGS`` (else
``../shared/data/agents``). They are never copied into the project: the corpus is
written under the bench's cache folder (``corpus.cache_dir()``), keyed by the
sources' bytes and this module (convlab's own sources do not change it).

Each copy is the source file with **fresh ids** (every UUID-shaped string,
keys included, mapped to a new UUID per copy, the same old id to the same new
one within a copy; the UUIDs that mean "no parent", LibreChat's nil UUID and
Claude.ai's root, are no ids and kept) and **its own texts**: a prose string (24 characters or
more, with a space, not JSON text) gets the word ``cN`` (N the copy's index)
after its first space, so no two copies share a text and nothing that counts
each distinct text once (the sweep's tokenizer) is flattered by the copies.
Every other value is kept as it was: times, usage, structure.

How copies are laid out, as users' folders hold them:

- one session a file (Claude Code, Codex, pi, Gemini CLI, Copilot CLI,
  LibreChat): a file per copy;
- an export that holds many conversations (ChatGPT's ``conversations.json``,
  Claude.ai's, Open WebUI's, OpenAssistant's trees): copies appended to one
  file, a new file past ``EXPORT_BYTES``.

A gzip-compressed source is written uncompressed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import corpus

ROOT = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("CONVLAB_REAL_LOGS") or ROOT / ".." / "shared" / "data" / "real").expanduser().resolve()
AGENTS = Path(os.environ.get("CONVLAB_AGENT_LOGS") or ROOT / ".." / "shared" / "data" / "agents").expanduser().resolve()

#: Files beside the logs that are about them, not logs.
NOT_LOGS = {"README.md", "MANIFEST.json", "STATS.json", "FORMATS.md"}
#: Formats whose file is an export of many conversations: copies go into one file (a new one past this size).
EXPORTS = {"chatgpt", "claude_ai", "openwebui", "oasst"}
EXPORT_BYTES = 64 << 20

#: UUIDs that are no id but a log's "no parent": LibreChat's nil UUID, Claude.ai's root (``claude_ai.ROOT_IDS``, written here:
#: the corpus's key covers this file, not convlab's)
_KEEP = {"00000000-0000-0000-0000-000000000000", "00000000-0000-4000-8000-000000000000"}
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class Missing(RuntimeError):
    """The real logs are not where the bench looks."""


def available() -> bool:
    return (REAL / "STATS.json").is_file() and (AGENTS / "STATS.json").is_file()


def sources() -> dict[str, list[Path]]:
    """Every real log, by the format convlab reads it as (sorted paths)."""
    import warnings

    import convlab

    if not available():
        raise Missing(f"the real logs are missing: set CONVLAB_REAL_LOGS and CONVLAB_AGENT_LOGS "
                      f"(looked in {REAL} and {AGENTS})")
    found: dict[str, list[Path]] = {}
    for root in (REAL, AGENTS):
        for p in sorted(root.rglob("*")):
            if not p.is_file() or p.name in NOT_LOGS or "LICENSES" in p.relative_to(root).parts:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                convs = convlab.read(p, progress=False)
            found.setdefault(convs[0].format, []).append(p)
    return found


def _raw(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _is_lines(data: bytes) -> bool:
    """JSONL (one value a line) rather than one JSON document."""
    try:
        json.loads(data)
        return False
    except ValueError:
        return True


class _Copy:
    """The rewrite of one copy: fresh ids and its own texts."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.ids: dict[str, str] = {}
        self.mark = f" c{n} "

    def _id(self, m: re.Match[str]) -> str:
        old = m.group()
        if old.lower() in _KEEP:  # no id: a sentinel ("no parent"), kept, or the copy would lose its roots
            return old
        new = self.ids.get(old)
        if new is None:
            new = self.ids[old] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"convlab-bench:{self.n}:{old.lower()}"))
        return new

    def text(self, s: str, key: bool = False) -> str:
        if "-" in s and len(s) >= 36:
            s = _UUID.sub(self._id, s)
        if not key and len(s) >= 24 and s[0] not in "{[" and " " in s:
            at = s.index(" ")
            s = s[:at] + self.mark + s[at + 1:]
        return s

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {self.text(k, key=True): self.value(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        return v


def _dump(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _copies(data: bytes, lines: bool, n: int) -> str:
    c = _Copy(n)
    if lines:
        return "".join(_dump(c.value(json.loads(ln))) + "\n" for ln in data.splitlines() if ln.strip())
    return _dump(c.value(json.loads(data)))


def build(per_format: int, *, formats: set[str] | None = None, progress: Callable[[str], None] | None = None) -> tuple[Path, dict[str, Any]]:
    """The corpus with about ``per_format`` bytes of each format (at least one copy of every source file), written
    once and cached: its folder (one subfolder per format) and what it holds, per format: files, bytes, copies."""
    found = sources()
    if formats is not None:
        found = {f: ps for f, ps in found.items() if f in formats}
    h = hashlib.sha256(repr((per_format, sorted(found))).encode())
    for ps in found.values():
        for p in ps:
            h.update(p.read_bytes())
    h.update(Path(__file__).read_bytes())
    key = h.hexdigest()[:16]
    which = "all" if formats is None else hashlib.sha256(",".join(sorted(found)).encode()).hexdigest()[:8]
    folder = corpus.cache_dir() / f"real-{per_format}-{which}-{key}"
    meta = folder / "corpus.json"
    if meta.exists():
        return folder, json.loads(meta.read_text())
    for old in corpus.cache_dir().glob(f"real-{per_format}-{which}-*"):  # stale: other sources
        shutil.rmtree(old, ignore_errors=True)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    info: dict[str, Any] = {}
    for fmt, paths in sorted(found.items()):
        if progress:
            progress(f"real corpus: {fmt}")
        (tmp / fmt).mkdir(parents=True)
        raw = [(p, _raw(p)) for p in paths]
        kinds = [(p, data, _is_lines(data)) for p, data in raw]
        written, copies, files = 0, 0, 0
        out = None
        out_bytes = 0
        parts: list[str] = []
        n = 0
        while written < per_format or n == 0:
            for p, data, lines in kinds:
                text = _copies(data, lines, n)
                size = len(text.encode())
                if fmt in EXPORTS:
                    if lines:
                        parts.append(text)
                    else:
                        doc = json.loads(text)
                        parts.append(_dump(doc if isinstance(doc, list) else [doc])[1:-1])
                    out_bytes += size
                    if out_bytes >= EXPORT_BYTES:
                        out = _flush(tmp / fmt, fmt, files, parts, lines)
                        files, parts, out_bytes = files + 1, [], 0
                else:
                    name = p.name[:-3] if p.suffix == ".gz" else p.name
                    (tmp / fmt / f"{n:05d}-{name}").write_text(text)
                    files += 1
                written += size
                copies += 1
            n += 1
        if parts:
            out = _flush(tmp / fmt, fmt, files, parts, kinds[0][2])
            files += 1
        del out
        info[fmt] = {"files": files, "bytes": written, "copies": copies, "rounds": n, "sources": [str(p) for p in paths]}
    (tmp / "corpus.json").write_text(json.dumps(info))
    os.replace(tmp, folder)
    return folder, info


def _flush(folder: Path, fmt: str, index: int, parts: list[str], lines: bool) -> Path:
    path = folder / f"{index:05d}-{fmt}.{'jsonl' if lines else 'json'}"
    path.write_text("".join(parts) if lines else "[" + ",".join(parts) + "]")
    return path


def files(folder: Path, fmt: str | None = None) -> Iterator[Path]:
    """The corpus's log files (of one format), in order."""
    for p in sorted((folder / fmt).iterdir() if fmt else folder.rglob("*")):
        if p.is_file() and p.name != "corpus.json":
            yield p


def json_loads(path: Path) -> object:
    """What the read row divides by: ``json.loads`` of the file's lines (JSONL) or of the whole file."""
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        return [json.loads(ln) for ln in data.splitlines() if ln.strip()]
    return json.loads(data)
