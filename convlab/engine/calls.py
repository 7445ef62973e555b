"""Model calls and making room (docs/protocol.md 5). An ``llm.call`` is checked against the
strategies before it runs (``applies``); a call that does not fit, or that a provider refuses as too
long, is held (``_hold``): ``context.limited``, the plan of what would make room (``_plan``, with its
summary calls: ``_summarize``), then the ``context.limit`` decision. ``context.replace``
(``_replace``) records a new branch at the root."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import jsondata, providers
from ..context import DEFAULT_PROMPT, Strategy, applies, kept
from ..errors import ProviderError
from ..tokens import content_chars, content_text, estimate
from ..tree import PathView, message_of, new_node
from .turns import Turns

#: How a summary message opens: it says the earlier conversation was summarized.
SUMMARY_PREFIX = "The earlier conversation was summarized:\n\n"


class Calls(Turns):
    """The actions that call a model or make room: ``llm.call`` and ``context.replace``."""

    def _call(self, action: dict[str, Any]) -> None:
        """One ``llm.call``: checked against the strategies unless it was held
        before, then run; the reply is recorded under the head."""
        tid = self._running
        assert tid is not None, "a call runs in the running turn"
        call_id = action.get("id") or self._new_call_id()
        held = self._calls.held.get(call_id)
        llm_name = action.get("llm") or (held or {}).get("llm") or next(iter(self.llms))
        model = action.get("model") or (held or {}).get("model")
        if llm_name not in self.llms:
            self._fail(f"llm.call: no provider named {llm_name!r} (known: {', '.join(self.llms)})")
            return
        stream = action.get("stream", True)
        given = action.get("messages")
        call = {"id": call_id, "llm": llm_name, "model": model, "messages": given, "stream": stream}
        if held is None:
            tokens = self._tree.count() if given is None else estimate(sum(content_chars(m["content"]) for m in given))
            limit = applies(self.config, tokens, first_call=not self._calls.called, idle_for=self.idle_for)
            if limit is not None:
                self._hold(call, limit.reason, limit.strategy, tokens)
                return
        (mid,) = self._new_ids(1)  # exact: nothing else is recorded while the call runs
        announce = {"message_id": mid} if stream else {}  # streamed: llm.delta shows the id, so it is taken for good
        self._emit("llm.started", turn_id=tid, call_id=call_id, summary=False, llm=llm_name, model=model, **announce)
        # the path: a read-only view, read only where the provider reads it; messages the action names: its own copy
        messages = jsondata.copy(given) if given is not None else PathView(self._tree, self.head)
        request = {"model": model, "messages": messages, "stream": stream, "summary": False}
        try:
            reply = self._complete(self.llms[llm_name], request, self._delta_to(tid, call_id, mid) if stream else None)
        except ProviderError as err:
            self._emit("llm.failed", turn_id=tid, call_id=call_id, error=err.kind, message=str(err))
            if err.kind == "too_long" and not (held or {}).get("overflowed"):
                self._hold(call, "overflow", self.config.summarize_strategy(), self._tree.count())
            elif err.kind == "too_long":
                self._fail(f"the provider refused call {call_id} as too long again")
            else:
                self._fail(f"call {call_id} failed: {err}")
            return
        self._emit("llm.completed", turn_id=tid, call_id=call_id, usage=reply["usage"])
        node = new_node({"role": "assistant", **reply}, id=mid, parent=self.head, seq=self._tree.seq + 1, time=self.clock, turn_id=tid)
        self._emit("message.new", turn_id=tid, message=node)
        assert self._answer is not None, "the call runs in the answer in flight"
        self._answer.reply = message_of(node)

    def _delta_to(self, turn_id: str, call_id: str, message_id: str) -> Callable[[str], None]:
        """What passes a streamed chunk on as ``llm.delta`` (docs/protocol.md 7, rev 3): to
        subscribers only, never to ``events`` or the log, so it has no ``seq``."""

        def on_delta(text: str) -> None:
            self._tell({"time": self.clock, "type": "llm.delta", "turn_id": turn_id, "call_id": call_id,
                        "message_id": message_id, "text": text})

        return on_delta

    def _complete(self, provider: providers.Provider, request: dict[str, Any],
                  on_delta: Callable[[str], None] | None = None) -> dict[str, Any]:
        """One model call (``providers.call``); its ``latency`` moves the clock, whatever its outcome."""
        return providers.call(provider, request, on_delta, took=self._took)

    def _took(self, seconds: float) -> None:
        self.clock += seconds

    def _hold(self, call: dict[str, Any], reason: str, strategy: Strategy, tokens: int) -> None:
        """Hold the call (docs/protocol.md 5.3): ``context.limited``, the plan (with its
        summary calls), then the ``context.limit`` decision. Holding ends the
        answer in flight: its remaining actions are dropped (gap), the answer to
        ``context.limit`` takes their place."""
        tid = self._running
        self._answer = None
        self._emit("context.limited", turn_id=tid, reason=reason, strategy=strategy.use, tokens=tokens,
                   window=self.config.window, call_id=call["id"], llm=call["llm"], model=call["model"])
        self._request(
            "context.limit",
            reason=reason,
            strategy=strategy.use,
            tokens=tokens,
            window=self.config.window,
            call={"id": call["id"], "llm": call["llm"], "request": {"model": call["model"], "messages": call["messages"]},
                  "stream": call["stream"]},
            proposed=self._plan(call["id"], strategy),
        )

    def _plan(self, call_id: str, strategy: Strategy) -> list[dict[str, Any]]:
        """``proposed``: replace the history with ``kept`` (and a summary of what
        precedes it), then run the call; the call as it was when that would leave
        the model nothing new (nothing precedes ``kept``, an empty ``kept`` for a
        reset, or no summary could be made)."""
        tree = self._tree
        keep = kept(tree.node(n) for n in tree.ancestors(self.head))
        path = tree.path_ids()
        before = [tree.node(n) for n in path[: len(path) - len(keep)]]
        as_was = [{"type": "llm.call", "id": call_id}]
        if not before or (strategy.use == "reset" and not keep):
            return as_was
        kept_messages = [message_of(n) for n in keep]
        if strategy.use == "reset":
            return [{"type": "context.replace", "messages": kept_messages}, *as_was]
        summary = self._summarize(before, strategy)
        if summary is None:
            return as_was
        return [{"type": "context.replace", "summary": summary, "messages": kept_messages}, *as_was]

    def _summarize(self, before: Sequence[Mapping[str, Any]], strategy: Strategy) -> str | None:
        """Run the summary call(s) over ``before``; None when there is nothing to
        summarize or the call fails (the call is then proposed as it was)."""
        front = before[:1] if before and before[0]["kind"] == "summary" else []
        rest = before[len(front):]
        if not rest or (strategy.llm is not None and strategy.llm not in self.llms):
            return None
        llm_name = strategy.llm or next(iter(self.llms))
        prompt = strategy.prompt or DEFAULT_PROMPT
        tid = self._running
        for _ in range(3):
            call_id = self._new_call_id()
            self._emit("llm.started", turn_id=tid, call_id=call_id, summary=True, llm=llm_name, model=strategy.model)
            request = {
                "model": strategy.model,
                "messages": [*(message_of(n) for n in (*front, *rest)), {"role": "user", "content": prompt}],
                "stream": False,
                "summary": True,
            }
            try:
                reply = self._complete(self.llms[llm_name], request)
            except ProviderError as err:
                self._emit("llm.failed", turn_id=tid, call_id=call_id, error=err.kind, message=str(err), summary=True)
                if err.kind != "too_long":
                    return None
                rest = rest[max(1, len(rest) // 2):]
                if not rest:
                    return None
                continue
            self._emit("llm.completed", turn_id=tid, call_id=call_id, usage=reply["usage"], summary=True)
            return content_text(reply["content"])
        return None

    def _replace(self, action: dict[str, Any]) -> None:
        """context.replace (docs/protocol.md 5.4): a new branch at the root."""
        tid = self._running
        summary, messages = action.get("summary"), action.get("messages") or []
        if not summary and not messages:
            self._fail("context.replace needs a summary or messages: it has neither")
            return
        old_head = self.head
        nodes: list[dict[str, Any]] = []
        if summary:
            nodes.append({"role": "user", "content": SUMMARY_PREFIX + summary, "kind": "summary"})
        for m in messages:
            if m.get("id") and m["id"] in self._tree:
                nodes.append({**message_of(self._tree.node(m["id"]), with_id=False), "copied_from": m["id"]})
            elif m.get("id") in self._calls.announced:  # a stopped reply's id stays its own: a new message
                nodes.append({k: v for k, v in m.items() if k != "id"})
            else:
                nodes.append(m)
        first = {"replaces": old_head, "state": self._tree.state_at() or None}
        parent = None
        for n, mid in zip(nodes, self._ids_for(nodes), strict=True):
            node = new_node(n, id=mid, parent=parent, seq=self._tree.seq + 1, time=self.clock, turn_id=tid,
                            kind=n.get("kind", "message"), copied_from=n.get("copied_from"), **first)
            self._emit("message.new", turn_id=tid, message=node, **({"copied_from": n["copied_from"]} if n.get("copied_from") else {}))
            parent, first = mid, {}
        self._emit("context.replaced", turn_id=tid, **{"from": old_head, "to": self.head})
