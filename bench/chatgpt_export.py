"""A heavy user's ChatGPT export: the generator, its check against the real exports, the reading rows.

The export is one ``conversations.json``: a JSON array of conversations, each
a ``mapping`` of id -> ``{id, message, parent, children}`` with a
``current_node``, as ChatGPT writes it (one line). It is generated from a
fixed seed, in the shapes of the real exports in ``../shared/data/real/chatgpt``:

- the conversation keys of a 2025 export (``gizmo_type``, ``memory_scope``,
  ...); most conversations start at the ``client-created-root`` placeholder,
  older ones at a random-id placeholder with the 2024 message keys (no
  ``channel``, integer ``weight``, ``pad``) as in the older real export;
- a hidden empty system message first, and in some a hidden
  ``user_editable_context`` message (custom instructions);
- branches: edits (a second user message beside the first) and
  regenerations (a second reply to the same question), and a
  ``current_node`` that is not always the newest leaf (the user went back
  to an earlier reply);
- tool messages: Python (an assistant ``code`` message to ``python``, a
  ``tool`` message with ``execution_output``) and image generation (``code``
  to ``dalle.text2im``, a ``tool`` message whose ``multimodal_text`` parts
  are image asset pointers); uploaded images (a user ``multimodal_text``
  message: an image pointer, then the text, and ``attachments``).

The real files have no tool or multimodal messages; those shapes follow
published descriptions of the export format. ``check`` compares the shapes
(every key path, discriminated by author role and content type, with the
JSON types found there) of a generated export with the real ones: every
shape of the real files must be generated, a shape both have must have the
same types, and what the generator adds beyond them must be one of the
message kinds above.

Rows: ``convlab.read`` of the export against ``json.load`` of it (time, in
alternation in one process); the peak memory of ``convlab.read`` in a fresh
interpreter (``python -m bench.readprobe``) against the file's size.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import uuid
from pathlib import Path
from typing import Any, Iterator

from . import corpus, logs
from .harness import Row, once, paired

SEED = 14
#: the real ChatGPT exports: in $CONVLAB_REAL_LOGS, else ../shared/data/real (the rule of tests/realdata.py)
REAL = Path(os.environ.get("CONVLAB_REAL_LOGS") or Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "real").expanduser().resolve() / "chatgpt"

#: The conversation keys of the 2025 real export, in its order.
CONVERSATION_KEYS = (
    "title", "create_time", "update_time", "mapping", "moderation_results", "current_node", "plugin_ids",
    "conversation_id", "conversation_template_id", "gizmo_id", "gizmo_type", "is_archived", "is_starred",
    "safe_urls", "blocked_urls", "default_model_slug", "conversation_origin", "voice", "async_status",
    "disabled_tool_ids", "is_do_not_remember", "memory_scope", "sugar_item_id", "id",
)

#: (role, content type) of the messages the generator writes beyond the real files.
BEYOND_REAL = {("assistant", "code"), ("tool", "execution_output"), ("tool", "multimodal_text"), ("user", "multimodal_text")}

_MODELS_2025 = ["gpt-4o", "gpt-4o", "gpt-4o", "o3", "gpt-4-1", "gpt-4o-mini"]
_MODELS_2024 = ["text-davinci-002-render-sha", "gpt-4", "gpt-4o"]
_TITLES = ["Fix pandas merge", "Trip to Lisbon", "Explain transformers", "Resume feedback", "SQL window functions",
           "Birthday ideas", "Rust lifetimes", "Summarize paper", "Meal plan", "Regex help", "Logo ideas", "Tax question"]


def _id(rng: random.Random, prefix: str = "") -> str:
    u = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return prefix + u[len(prefix):]


def _text(rng: random.Random, low: int, high: int, tag: str) -> str:
    n = int(low * (high / low) ** rng.random())
    s = corpus.text(rng, n, tag)
    if rng.random() < 0.3:  # real exports carry typographic quotes and dashes (written as \\u escapes)
        s = s.replace(". ", "\u2019s \u2014 ", 1)
    return s


class _Conversation:
    """One conversation being written: its mapping, in creation order."""

    def __init__(self, rng: random.Random, index: int, t0: float, modern: bool) -> None:
        self.rng = rng
        self.index = index
        self.t = t0
        self.modern = modern
        self.model = rng.choice(_MODELS_2025 if modern else _MODELS_2024)
        self.mapping: dict[str, dict[str, Any]] = {}
        root = "client-created-root" if modern else _id(rng, "aaa1")
        self.mapping[root] = {"id": root, "message": None, "parent": None, "children": []}
        self.root = root

    # -- the mapping ----------------------------------------------------
    def add(self, parent: str, message: dict[str, Any]) -> str:
        mid = message["id"]
        self.mapping[mid] = {"id": mid, "message": message, "parent": parent, "children": []}
        self.mapping[parent]["children"].append(mid)
        return mid

    def tick(self, low: float, high: float) -> float:
        self.t += self.rng.uniform(low, high)
        return self.t

    def message(self, role: str, content: dict[str, Any], *, metadata: dict[str, Any], time: float | None,
                name: str | None = None, recipient: str = "all", end_turn: bool | None = None, weight: float = 1.0,
                prefix: str = "") -> dict[str, Any]:
        m = {
            "id": _id(self.rng, prefix),
            "author": {"role": role, "name": name, "metadata": {}},
            "create_time": time,
            "update_time": None,
            "content": content,
            "status": "finished_successfully",
            "end_turn": end_turn,
            "weight": float(weight) if self.modern else int(weight),
            "metadata": metadata,
            "recipient": recipient,
        }
        if self.modern:
            m["channel"] = None
        return m

    def request_id(self) -> str:
        return f"{self.rng.getrandbits(64):016x}-{self.rng.choice(['IAD', 'LHR', 'SJC', 'FRA'])}"

    # -- kinds of message -----------------------------------------------
    def hidden_system(self) -> dict[str, Any]:
        return self.message("system", {"content_type": "text", "parts": [""]}, time=None, end_turn=True, weight=0,
                            metadata={"is_visually_hidden_from_conversation": True})

    def custom_instructions(self) -> dict[str, Any]:
        about = _text(self.rng, 60, 400, "about")
        content = {"content_type": "user_editable_context", "user_profile": "",
                   "user_instructions": f"The user provided the additional info about how they would like you to respond:\n```{about}```"}
        return self.message("user", content, time=None, metadata={
            "is_visually_hidden_from_conversation": True,
            "user_context_message_data": {"about_model_message": about},
            "is_user_system_message": True,
        })

    def user(self, tag: str) -> dict[str, Any]:
        text = _text(self.rng, 20, 1500, tag)
        time = round(self.tick(20, 400), 3)
        rid = self.request_id()
        if self.modern:
            meta: dict[str, Any] = {"selected_sources": [], "selected_github_repos": [],
                                    "serialization_metadata": {"custom_symbol_offsets": []}, "request_id": rid,
                                    "message_source": None, "timestamp_": "absolute", "message_type": None}
        else:
            meta = {"request_id": rid, "timestamp_": "absolute", "message_type": None}
        if self.modern and self.rng.random() < 0.04:  # an uploaded image
            pointer, attachment = self.upload()
            meta["attachments"] = [attachment]
            content: dict[str, Any] = {"content_type": "multimodal_text", "parts": [pointer, text]}
        else:
            content = {"content_type": "text", "parts": [text]}
        return self.message("user", content, time=time, metadata=meta, prefix="" if self.modern else "aaa2")

    def upload(self) -> tuple[dict[str, Any], dict[str, Any]]:
        fid = f"file-{self.rng.getrandbits(96):024x}"
        w, h = self.rng.choice([(1024, 768), (768, 1024), (1536, 1152), (512, 512)])
        size = self.rng.randint(40_000, 900_000)
        pointer = {"content_type": "image_asset_pointer", "asset_pointer": f"file-service://{fid}", "size_bytes": size,
                   "width": w, "height": h, "fovea": None, "metadata": self.pointer_meta(None)}
        attachment = {"id": fid, "size": size, "name": f"IMG_{self.rng.randint(1000, 9999)}.jpeg", "mime_type": "image/jpeg",
                      "width": w, "height": h}
        return pointer, attachment

    @staticmethod
    def pointer_meta(dalle: dict[str, Any] | None) -> dict[str, Any]:
        return {"dalle": dalle, "gizmo": None, "generation": None, "container_pixel_height": None,
                "container_pixel_width": None, "emu_omit_glimpse_image": None, "emu_patches_override": None,
                "sanitized": dalle is not None, "asset_pointer_link": None, "watermarked_asset_pointer": None}

    def assistant_meta(self, parent: str, rid: str, *, finish: str = "stop") -> dict[str, Any]:
        if self.modern:
            return {"finish_details": {"type": finish, "stop_tokens": [200002]}, "is_complete": True, "citations": [],
                    "content_references": [], "message_type": None, "model_slug": self.model,
                    "default_model_slug": self.model, "parent_id": parent, "request_id": rid, "timestamp_": "absolute"}
        return {"finish_details": {"type": finish, "stop_tokens": [100260]}, "citations": [], "gizmo_id": None,
                "message_type": None, "model_slug": self.model, "default_model_slug": self.model,
                "pad": "A" * self.rng.randint(10, 30), "parent_id": parent, "is_complete": True, "request_id": rid,
                "timestamp_": "absolute"}

    def answer(self, parent: str, rid: str, tag: str) -> dict[str, Any]:
        content = {"content_type": "text", "parts": [_text(self.rng, 150, 6000, tag)]}
        return self.message("assistant", content, time=self.tick(1, 30), end_turn=True,
                            metadata=self.assistant_meta(parent, rid))

    def reply(self, question: str, tag: str) -> str:
        """The assistant's side of a turn under ``question`` (maybe a tool round first); its last node."""
        rid = self.request_id()
        parent = question
        r = self.rng.random()
        if self.modern and r < 0.10:  # Python
            code = {"content_type": "code", "language": "unknown", "response_format_name": None,
                    "text": _text(self.rng, 80, 800, f"{tag}-code")}
            call = self.message("assistant", code, time=self.tick(1, 10), end_turn=False, recipient="python",
                                metadata=self.assistant_meta(parent, rid))
            parent = self.add(parent, call)
            output = {"content_type": "execution_output", "text": _text(self.rng, 20, 2000, f"{tag}-out")}
            result = self.message("tool", output, time=self.tick(1, 5), name="python", metadata={
                "is_complete": True, "aggregate_result": {"status": "success", "run_id": _id(self.rng), "start_time": self.t,
                                                          "update_time": self.t, "code": code["text"][:60], "end_time": self.t,
                                                          "final_expression_output": None, "in_kernel_exception": None,
                                                          "system_exception": None, "messages": [], "jupyter_messages": [],
                                                          "timeout_triggered": None},
                "message_type": None, "model_slug": self.model, "default_model_slug": self.model, "parent_id": parent,
                "request_id": rid, "timestamp_": "absolute"})
            parent = self.add(parent, result)
        elif self.modern and r < 0.13:  # image generation
            prompt = _text(self.rng, 80, 400, f"{tag}-prompt")
            call = self.message("assistant", {"content_type": "code", "language": "json", "response_format_name": None,
                                              "text": json.dumps({"prompt": prompt, "size": "1024x1024"})},
                                time=self.tick(1, 10), end_turn=False, recipient="dalle.text2im",
                                metadata=self.assistant_meta(parent, rid))
            parent = self.add(parent, call)
            gen = {"gen_id": f"{self.rng.getrandbits(64):016x}", "prompt": prompt, "seed": self.rng.getrandbits(32),
                   "parent_gen_id": None, "edit_op": None, "serialization_title": "DALL-E generation metadata"}
            pointer = {"content_type": "image_asset_pointer", "asset_pointer": f"file-service://file-{self.rng.getrandbits(96):024x}",
                       "size_bytes": self.rng.randint(200_000, 600_000), "width": 1024, "height": 1024, "fovea": None,
                       "metadata": self.pointer_meta(gen)}
            result = self.message("tool", {"content_type": "multimodal_text", "parts": [pointer]}, time=self.tick(5, 30),
                                  name="dalle.text2im", metadata={"message_type": None, "model_slug": self.model,
                                                                   "default_model_slug": self.model, "parent_id": parent,
                                                                   "request_id": rid, "timestamp_": "absolute"})
            parent = self.add(parent, result)
        return self.add(parent, self.answer(parent, rid, tag))

    # -- the whole conversation -----------------------------------------
    def build(self) -> dict[str, Any]:
        rng = self.rng
        created = self.t
        node = self.add(self.root, self.hidden_system())
        if self.modern and rng.random() < 0.4:
            node = self.add(node, self.custom_instructions())
        turns = max(1, int(rng.lognormvariate(2.0, 0.9)))
        head = node
        for k in range(turns):
            tag = f"c{self.index}t{k}"
            question = self.add(head, self.user(tag))
            head = self.reply(question, tag)
            if rng.random() < 0.08:  # regenerate: another reply to the same question
                again = self.reply(question, tag + "r")
                if rng.random() < 0.7:  # the user keeps the new reply (else goes back to the first)
                    head = again
            if k + 1 < turns and rng.random() < 0.05:  # edit: the question again, beside the first
                parent = self.mapping[question]["parent"]
                question = self.add(parent, self.user(tag + "e"))
                head = self.reply(question, tag + "e")
        conv_id = _id(rng)
        return {
            "title": rng.choice(_TITLES) + ("" if rng.random() < 0.5 else f" ({self.index})"),
            "create_time": created,
            "update_time": self.t,
            "mapping": self.mapping,
            "moderation_results": [],
            "current_node": head,
            "plugin_ids": None,
            "conversation_id": conv_id,
            "conversation_template_id": None,
            "gizmo_id": None,
            "gizmo_type": None,
            "is_archived": False,
            "is_starred": None,
            "safe_urls": [],
            "blocked_urls": [],
            "default_model_slug": self.model,
            "conversation_origin": None,
            "voice": None,
            "async_status": None,
            "disabled_tool_ids": [],
            "is_do_not_remember": False,
            "memory_scope": "global_enabled",
            "sugar_item_id": None,
            "id": conv_id,
        }


def conversations(count: int, *, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """``count`` conversations, newest first (as ChatGPT lists them), from ``seed``."""
    rng = random.Random(seed)
    starts = sorted((1_680_000_000 + rng.random() * 70_000_000 for _ in range(count)), reverse=True)
    for i, t0 in enumerate(starts):
        yield _Conversation(random.Random(rng.getrandbits(64)), i, t0, modern=t0 >= 1_735_689_600).build()


def write(path: str | os.PathLike, count: int, *, seed: int = SEED) -> dict[str, Any]:
    """Write the export to ``path`` (one line, as ChatGPT does); what it holds."""
    info = {"conversations": 0, "messages": 0, "branch_points": 0, "tool_messages": 0, "multimodal": 0,
            "not_newest_leaf": 0}
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        for i, conv in enumerate(conversations(count, seed=seed)):
            if i:
                f.write(", ")
            f.write(json.dumps(conv))
            _tally(conv, info)
        f.write("]")
    info["bytes"] = os.path.getsize(path)
    return info


def _tally(conv: dict[str, Any], info: dict[str, Any]) -> None:
    info["conversations"] += 1
    newest = None
    for entry in conv["mapping"].values():
        m = entry["message"]
        if len(entry["children"]) > 1:
            info["branch_points"] += 1
        if m is None:
            continue
        info["messages"] += 1
        info["tool_messages"] += m["author"]["role"] == "tool"
        info["multimodal"] += m["content"]["content_type"] == "multimodal_text"
        if not entry["children"]:
            newest = entry["id"]
    info["not_newest_leaf"] += conv["current_node"] != newest


def cached(count: int, *, seed: int = SEED) -> tuple[Path, dict[str, Any]]:
    """The export for these parameters, written once and cached (keyed by the
    parameters and the generator's sources)."""
    h = hashlib.sha256(repr((count, seed)).encode())
    for f in (Path(__file__), Path(corpus.__file__)):
        h.update(f.read_bytes())
    key = h.hexdigest()[:16]
    path = corpus.cache_dir() / f"chatgpt-{count}-{seed}-{key}.json"
    meta = path.with_suffix(".info")
    if path.exists() and meta.exists():
        return path, json.loads(meta.read_text())
    for old in corpus.cache_dir().glob(f"chatgpt-{count}-{seed}-*"):
        old.unlink(missing_ok=True)
    tmp = path.with_suffix(".tmp")
    info = write(tmp, count, seed=seed)
    os.replace(tmp, path)
    meta.write_text(json.dumps(info))
    return path, info


# -- the check against the real exports ------------------------------------------


def shapes(value: Any) -> dict[str, set[str]]:
    """Every key path of an export and the JSON types found there.

    A mapping's keys are ``*``, list items ``[]``; a message's path is
    discriminated by its author role and content type, ``message<user:text>``.
    """
    out: dict[str, set[str]] = {}

    def kind(v: Any) -> str:
        return "null" if v is None else "bool" if isinstance(v, bool) else "number" if isinstance(v, (int, float)) else type(v).__name__

    def walk(v: Any, path: str) -> None:
        out.setdefault(path, set()).add(kind(v))
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{path}.*" if path.endswith(".mapping") else f"{path}.{k}")
        elif isinstance(v, list):
            for x in v:
                walk(x, f"{path}[]")

    for conv in value:
        for k, v in conv.items():
            if k != "mapping":
                walk(v, f"conversation.{k}")
        for entry in conv["mapping"].values():
            for k, v in entry.items():
                if k != "message":
                    walk(v, f"entry.{k}")
            m = entry["message"]
            if m is None:
                walk(None, "entry.message")
                continue
            out.setdefault("entry.message", set()).add("dict")
            walk(m, f"message<{m['author']['role']}:{m['content']['content_type']}>")
    return out


def check(generated: list[dict[str, Any]], real_dir: Path = REAL) -> dict[str, Any]:
    """Compare the shapes of generated conversations with the real exports.

    ``missing``: shapes of the real files the generator never writes;
    ``mismatched``: paths both have, with other JSON types; ``unexplained``:
    message kinds the generator writes that are neither in the real files nor
    in ``BEYOND_REAL``. All three empty: the generator writes the real format.
    """
    real: dict[str, set[str]] = {}
    for f in sorted(real_dir.glob("*.json")):
        for path, kinds in shapes(json.loads(f.read_text(encoding="utf-8"))).items():
            real.setdefault(path, set()).update(kinds)
    if not real:
        return {"ok": False, "error": f"no real ChatGPT export in {real_dir.resolve()}"}
    gen = shapes(generated)
    missing = sorted(p for p in real if p not in gen)
    mismatched = sorted(f"{p}: real {sorted(real[p])}, generated {sorted(gen[p])}" for p in gen if p in real and not gen[p] <= real[p])
    kinds_real = {p.split(">")[0] for p in real if p.startswith("message<")}
    extra = {p.split(">")[0] for p in gen if p.startswith("message<")} - kinds_real
    beyond = {f"message<{r}:{t}" for r, t in BEYOND_REAL}
    return {
        "missing": missing,
        "mismatched": mismatched,
        "unexplained": sorted(extra - beyond),
        "beyond_real": sorted(k + ">" for k in extra & beyond),
        "conversation_keys": [list(c) for c in generated[:1]] == [list(CONVERSATION_KEYS)],
        "ok": not missing and not mismatched and not (extra - beyond) and all(tuple(c) == CONVERSATION_KEYS for c in generated),
    }


# -- the rows -------------------------------------------------------------------------


def _read(path: Path) -> int:
    import convlab

    return len(convlab.read(path, progress=False))


def _json_load(path: Path) -> int:
    with open(path, encoding="utf-8") as f:
        return len(json.load(f))


def _size(smoke: bool) -> int:
    return 200 if smoke else 5_000


def run_read(smoke: bool) -> Row:
    count = _size(smoke)
    generated = list(conversations(60 if smoke else 400))
    verdict = check(generated)
    del generated
    path, info = cached(count)
    row = Row("export", f"reading a heavy user's ChatGPT export ({info['conversations']:,} conversations, {info['bytes'] / (1 << 20):.0f} MB) / json.load of it",
              2.5, "<=", num_label="convlab.read", den_label="json.load")
    num, den, a, b = paired(lambda: once(lambda: _read(path)), lambda: once(lambda: _json_load(path)), 2 if smoke else 3)
    row.finish(num, den)
    checked = ("not checked against real exports: " + verdict["error"] if "error" in verdict  # a clone without them
               else f"generator checked against the real exports: {'same keys and shapes' if verdict['ok'] else 'DIFFERS'}")
    row.note = (f"{info['messages']:,} messages, {info['branch_points']:,} branch points, {info['tool_messages']:,} tool messages, "
                f"{info['multimodal']:,} multimodal; {checked}")
    if not verdict["ok"] and "error" not in verdict:
        row.error = f"the generator no longer writes the real export's shapes: {verdict}"
    row.extra = {"samples_num": a, "samples_den": b, "export": info, "check": verdict}
    return row


def run_memory(smoke: bool) -> Row:
    path, info = cached(_size(smoke))
    size = info["bytes"]
    row = Row("export_memory", f"reading that export ({size / (1 << 20):.0f} MB): peak memory / file size", 3, "<=", unit="B",
              num_label="convlab.read", den_label="file")
    timeout = 120 if smoke else 900
    read = logs.probe(path, "read", timeout, module="bench.readprobe")
    if "error" in read:
        row.error = read["error"]
        return row
    load = logs.probe(path, "json", timeout, module="bench.readprobe")
    row.finish(read["peak"], size)
    row.note = (f"peak RSS growth ({read['method']}) during convlab.read in a fresh interpreter, {read['seconds']:.1f} s, "
                f"{read['conversations']:,} conversations / {read['messages']:,} messages kept; "
                f"json.load alone peaks at {load.get('peak', float('nan')) / size:.2f}x the file")
    if read["conversations"] != info["conversations"] or read["messages"] != info["messages"]:
        row.error = f"read {read['conversations']} conversations / {read['messages']} messages, the export has {info['conversations']} / {info['messages']}"
    row.extra = {"read": read, "json": load, "export": info}
    return row
