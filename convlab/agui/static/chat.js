// convlab's chat page: one AG-UI thread as a chat, with its branches. Plain ESM, no build step.
//
// The server is the truth: the page reads the thread (GET /threads/{id}: every node, the head, a waiting
// interrupt), draws the active path, and every action is one AG-UI run (POST /) with a history:
//   send        the active path + a new user message
//   edit        the path above a message + the edited text as a new message (a new id: a branch)
//   regenerate  the path above a reply (cut before it: a new reply beside it)
//   ‹ n/m ›     the path to the newest leaf under a sibling (a branch switch: nothing is written)
//   a decision  a run whose resume answers the waiting interrupt (a context.limit)
// The reply streams into the page as it comes; after each run the thread is read again.
// Message text is untrusted: it is only ever set as text (textContent), never as HTML.

const params = new URLSearchParams(location.search);
const token = params.get("token");
const $ = (id) => document.getElementById(id);
const chat = $("cc-chat");
const statusLine = $("cc-status");
const input = $("cc-input");
const sendButton = $("cc-send");
const stopButton = $("cc-stop");
const panel = $("cc-interrupt");
const summaryBox = $("cc-summary");

/** @typedef {{id: string, parent: string|null, role: string, content: any, seq: number, kind: string,
 *             tool_calls?: any[], tool_call_id?: string}} Node */

const state = {
  thread: params.get("thread") || newThreadId(),
  /** @type {Map<string, Node>} */ nodes: new Map(),
  /** @type {Map<string|null, string[]>} */ kids: new Map(),
  head: null,
  /** @type {string[]} */ path: [], // ids root -> head (the server's)
  /** @type {Object<string, string[]>} */ lanes: {}, // sibling id -> its lane (the server's)
  /** @type {Set<string>} */ cut: new Set(), // replies that stopped at the token limit (the server says which)
  /** @type {{message: string, tokens: number, window: number|null}|null} */
  tooLong: null, // the message the model cannot read, when the last turn failed on it (the server says which)
  interrupt: null,
  running: null, // the AbortController of the run in flight
  editing: null, // the id of the message being edited
  runs: 0, // runs finished and drawn from the thread read back
};

function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function newThreadId() {
  return "chat-" + uuid().slice(0, 8);
}

function headers(extra = {}) {
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

function pageUrl(thread) {
  const p = new URLSearchParams(location.search);
  p.set("thread", thread);
  return `${location.pathname}?${p}`;
}

// -- the tree ---------------------------------------------------------------------------------

/** The text a model reads: a string, or the parts joined (text parts, others as JSON). */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (p && p.type === "text" && typeof p.text === "string" ? p.text : JSON.stringify(p))).join("");
}

function setTree(snapshot) {
  state.nodes = new Map();
  state.kids = new Map();
  for (const node of snapshot ? snapshot.nodes : []) {
    state.nodes.set(node.id, node);
    if (!state.kids.has(node.parent)) state.kids.set(node.parent, []);
    state.kids.get(node.parent).push(node.id); // nodes come in seq order
  }
  state.head = snapshot ? snapshot.head : null;
  state.path = snapshot ? snapshot.path : [];
  state.lanes = snapshot ? snapshot.lanes : {};
  state.cut = new Set(snapshot ? snapshot.cut || [] : []);
  state.tooLong = snapshot ? snapshot.too_long || null : null;
  state.interrupt = snapshot ? snapshot.interrupt : null;
}

/** The active path's nodes, root -> head, as the server laid it out (the page never walks the tree). */
export function activePath() {
  return state.path.map((id) => state.nodes.get(id));
}

/** The nodes of the active path above `id`, a message on it. */
function pathAbove(id) {
  return activePath().slice(0, state.path.indexOf(id));
}

/** Where switching to `id` (a sibling of a message on the active path) lands: the path above
 * it, then its lane down to the newest leaf under it (the server's). */
export function switchPath(id) {
  const parent = state.nodes.get(id).parent;
  const above = parent == null ? [] : activePath().slice(0, state.path.indexOf(parent) + 1);
  return [...above, ...(state.lanes[id] || [id]).map((n) => state.nodes.get(n))];
}

/** A node as an AG-UI message (known ids are matched by id: their content is the tree's anyway). */
function toAgui(node) {
  const msg = { id: node.id, role: node.role, content: contentText(node.content) };
  if (node.role === "assistant" && node.tool_calls && node.tool_calls.length) {
    msg.toolCalls = node.tool_calls.map((c) => ({ id: c.id, type: "function", function: c.function }));
  }
  if (node.role === "tool") msg.toolCallId = node.tool_call_id || "";
  return msg;
}

// -- drawing ----------------------------------------------------------------------------------

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function button(label, onClick, aria) {
  const b = el("button", "", label);
  b.type = "button";
  if (aria) b.setAttribute("aria-label", aria);
  b.addEventListener("click", onClick);
  return b;
}

function who(node) {
  if (node.kind === "summary") return "Summary of the earlier conversation";
  return { user: "You", assistant: "Assistant", tool: "Tool", system: "System" }[node.role] || node.role;
}

/** One message: who, the text, its tool calls, and what can be done with it (``mode`` "tree");
 * during a run the history is shown "plain" (no buttons) and a reply "live" (streaming). */
function bubble(node, mode = "tree") {
  const box = el("div", `cc-msg cc-msg-${node.role}${node.kind === "summary" ? " cc-msg-summary" : ""}`);
  box.dataset.id = node.id;
  box.append(el("div", "cc-who", who(node)));
  const body = el("div", "cc-bubble");
  const text = el("span", "cc-text", contentText(node.content));
  body.append(text);
  for (const call of node.tool_calls || []) {
    const fn = call.function || {};
    body.append(el("span", "cc-tool-call", `→ ${fn.name || "tool"}(${fn.arguments || ""})`));
  }
  box.append(body);
  if (state.cut.has(node.id)) {
    box.append(el("div", "cc-cut", "Cut at the token limit: the model stopped when its reply reached the most tokens it may write."));
  }
  if (mode === "tree" && state.tooLong && state.tooLong.message === node.id) box.append(el("div", "cc-too-long", tooLongNote(state.tooLong)));
  if (mode === "live") box.classList.add("cc-streaming");
  if (mode !== "tree") return box;
  if (state.editing === node.id) {
    box.replaceChild(editor(node), body);
    return box;
  }
  const controls = el("div", "cc-controls");
  const sibs = state.kids.get(node.parent) || [];
  if (sibs.length > 1) {
    const i = sibs.indexOf(node.id);
    const nav = el("span", "cc-nav");
    const prev = button("‹", () => switchTo(sibs[i - 1]), "Previous version");
    const next = button("›", () => switchTo(sibs[i + 1]), "Next version");
    prev.disabled = i === 0 || busy();
    next.disabled = i === sibs.length - 1 || busy();
    nav.append(prev, el("span", "cc-count", `${i + 1}/${sibs.length}`), next);
    controls.append(nav);
  }
  if (node.role === "user" && node.kind !== "summary") {
    const edit = button("Edit", () => { state.editing = node.id; draw(); });
    edit.disabled = busy();
    controls.append(edit);
  }
  if (node.role !== "assistant" && node.id === state.head && state.interrupt === null) {
    // the path ends unanswered (a stopped or ended turn): the same history again asks for the reply
    const reply = button("Get a reply", () => runAgent(activePath()));
    reply.disabled = busy();
    controls.append(reply);
  }
  if (node.role === "assistant") {
    const again = button("Regenerate", () => regenerate(node));
    again.disabled = busy();
    controls.append(again);
  }
  if (controls.childElementCount) box.append(controls);
  return box;
}

/** What to do about a message the model cannot read (the server's figures: about how many tokens, its context). */
export function tooLongNote(tooLong) {
  const holds = tooLong.window ? `; its context holds ${tooLong.window.toLocaleString("en")}` : "";
  return `Too long for the model (about ${tooLong.tokens.toLocaleString("en")} tokens${holds}): every message after it on ` +
    "this path is refused. Edit it (shorter), or branch before it: edit an earlier message, or switch to another branch.";
}

function editor(node) {
  const form = el("div", "cc-edit");
  const area = el("textarea");
  area.value = contentText(node.content);
  area.rows = Math.min(8, Math.max(2, area.value.split("\n").length));
  area.setAttribute("aria-label", "Edited message");
  const row = el("div");
  row.append(
    button("Cancel", () => { state.editing = null; draw(); }),
    button("Save and send", () => {
      const text = area.value.trim();
      state.editing = null;
      if (text) edit(node, text); else draw();
    }),
  );
  row.lastChild.classList.add("cc-primary");
  form.append(area, row);
  setTimeout(() => area.focus(), 0);
  return form;
}

function busy() {
  return state.running !== null;
}

/** The active path from the tree. */
function draw() {
  const path = activePath();
  chat.replaceChildren(...path.map((n) => bubble(n)));
  if (!path.length) chat.append(el("div", "cc-empty", "No messages yet: say something."));
  drawInterrupt();
  const waiting = state.interrupt !== null;
  input.disabled = waiting || busy();
  sendButton.disabled = waiting || busy();
  sendButton.hidden = busy();
  stopButton.hidden = !busy();
  input.placeholder = waiting ? WAITS : MESSAGE;
  input.title = waiting ? WAITS : "";
  if (waiting && !busy()) say("Answer the decision above before the next message.");
}

const MESSAGE = input.placeholder;
const WAITS = "Waiting for your decision on the context limit (above): accept, edit, run as is, reset or end the turn, then write";

function drawInterrupt() {
  const waiting = state.interrupt;
  panel.hidden = !waiting;
  if (!waiting) return;
  const decision = (waiting.metadata && waiting.metadata.decision) || {};
  const replace = (decision.proposed || []).find((a) => a.type === "context.replace");
  const proposed = replace && replace.summary ? replace.summary : "";
  $("cc-interrupt-message").textContent = waiting.message || "";
  const facts = [`reason ${decision.reason}`, `strategy ${decision.strategy}`, `${decision.tokens} tokens`];
  if (decision.window) facts.push(`window ${decision.window}`);
  $("cc-interrupt-facts").textContent = facts.join(" · ");
  if (panel.dataset.for !== waiting.id) {
    panel.dataset.for = waiting.id;
    summaryBox.value = proposed;
    summaryBox.dataset.proposed = proposed;
    // a new decision: bring it into view (after six turns it opens below the fold, Send disabled)
    requestAnimationFrame(() => panel.scrollIntoView({ block: "nearest" }));
  }
  const edited = summaryBox.value.trim() !== "" && summaryBox.value !== summaryBox.dataset.proposed;
  for (const b of panel.querySelectorAll("button[data-action]")) {
    const action = b.dataset.action;
    b.disabled = busy() || (action === "accept_edited" && !edited) || (action === "accept" && edited);
  }
}

function say(text, error = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle("cc-error", error);
}

// -- the server -------------------------------------------------------------------------------

async function load() {
  const r = await fetch(`threads/${encodeURIComponent(state.thread)}`, { headers: headers() });
  if (r.status === 404) setTree(null);
  else if (r.ok) setTree(await r.json());
  else {
    say(`could not read the thread: HTTP ${r.status} ${await r.text()}`, true);
    return;
  }
  draw();
}

/** The thread picker; whether this page's thread exists on the server yet. */
async function loadThreads() {
  const r = await fetch("threads", { headers: headers() });
  if (!r.ok) {
    say(`could not list the threads: HTTP ${r.status} ${await r.text()}`, true);
    return false;
  }
  const ids = (await r.json()).threads;
  const exists = ids.includes(state.thread);
  if (!exists) ids.push(state.thread);
  const select = $("cc-threads");
  select.replaceChildren(...ids.map((id) => {
    const o = el("option", "", id);
    o.value = id;
    o.selected = id === state.thread;
    return o;
  }));
  return exists;
}

/** One AG-UI run: POST the history (or a resume), stream its events into the page, then read the thread again. */
async function runAgent(history, resume) {
  const controller = new AbortController();
  state.running = controller;
  state.editing = null;
  const shown = history.map((m) => ({ ...m, parent: null, seq: 0, kind: m.kind || "message" }));
  const live = new Map(); // message id -> its streaming element
  say(resume ? "Answering the decision…" : "");
  drawLive(shown, live);
  const body = {
    threadId: state.thread, runId: uuid(), protocolVersion: "1.0", state: {}, tools: [], context: [], forwardedProps: {},
    messages: history.map(toAgui),
  };
  if (resume) body.resume = resume;
  try {
    const r = await fetch("./", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (!r.ok) {
      say(`the server refused the run: HTTP ${r.status} ${await r.text()}`, true);
      return;
    }
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      const blocks = buffer.split("\n\n");
      buffer = blocks.pop();
      for (const block of blocks) {
        const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
        if (data) onEvent(JSON.parse(data), shown, live);
      }
    }
  } catch (err) {
    if (err.name === "AbortError") say("Stopped: the turn was interrupted.");
    else say(`the run failed: ${err.message}`, true);
  } finally {
    state.running = null;
    await load();
    await loadThreads();
    state.runs += 1;
  }
}

function drawLive(shown, live) {
  chat.replaceChildren(...shown.map((n) => live.get(n.id) || bubble(n, "plain")));
  panel.hidden = true;
  input.disabled = true;
  sendButton.hidden = true;
  stopButton.hidden = false;
  chat.lastElementChild && chat.lastElementChild.scrollIntoView({ block: "end" });
}

function onEvent(ev, shown, live) {
  switch (ev.type) {
    case "TEXT_MESSAGE_START": {
      const node = { id: ev.messageId, role: ev.role || "assistant", content: "", kind: "message" };
      shown.push(node);
      const box = bubble(node, "live");
      live.set(node.id, box);
      chat.append(box);
      break;
    }
    case "TEXT_MESSAGE_CONTENT": {
      const box = live.get(ev.messageId);
      if (box) box.querySelector(".cc-text").textContent += ev.delta;
      break;
    }
    case "TEXT_MESSAGE_END": {
      const box = live.get(ev.messageId);
      if (box) box.classList.remove("cc-streaming");
      break;
    }
    case "TOOL_CALL_START": {
      let box = live.get(ev.parentMessageId);
      if (!box) {
        const node = { id: ev.parentMessageId || ev.toolCallId, role: "assistant", content: "", kind: "message" };
        shown.push(node);
        box = bubble(node, "live");
        live.set(node.id, box);
        chat.append(box);
      }
      const call = el("span", "cc-tool-call", `→ ${ev.toolCallName}(`);
      call.dataset.call = ev.toolCallId;
      box.querySelector(".cc-bubble").append(call);
      break;
    }
    case "TOOL_CALL_ARGS": {
      const call = chat.querySelector(`[data-call="${CSS.escape(ev.toolCallId)}"]`);
      if (call) call.textContent += ev.delta;
      break;
    }
    case "TOOL_CALL_END": {
      const call = chat.querySelector(`[data-call="${CSS.escape(ev.toolCallId)}"]`);
      if (call) call.textContent += ")";
      break;
    }
    case "MESSAGES_SNAPSHOT": {
      shown.splice(0, shown.length, ...ev.messages.map((m) => ({ ...m, tool_calls: m.toolCalls, kind: "message" })));
      live.clear();
      drawLive(shown, live);
      break;
    }
    case "STEP_STARTED":
      say("Summarizing the earlier conversation…");
      break;
    case "STEP_FINISHED":
      say("");
      break;
    case "RUN_FINISHED": {
      const outcome = ev.outcome || { type: "success" };
      if (outcome.type === "cancelled") say("The turn was cancelled (another run moved the head).");
      else if (outcome.type === "interrupt") say("Answer the decision above before the next message.");
      else say("");
      break;
    }
    case "RUN_ERROR":
      say(`Refused: ${ev.message}`, true);
      break;
    default:
      break;
  }
  if (chat.lastElementChild) chat.lastElementChild.scrollIntoView({ block: "end" });
}

// -- actions: each is one run with a history ---------------------------------------------------

function send(text) {
  return runAgent([...activePath(), { id: uuid(), role: "user", content: text }]);
}

function edit(node, text) {
  return runAgent([...pathAbove(node.id), { id: uuid(), role: "user", content: text }]);
}

function regenerate(node) {
  return runAgent(pathAbove(node.id));
}

function switchTo(id) {
  return runAgent(switchPath(id));
}

function answer(action) {
  const waiting = state.interrupt;
  const payload = { action };
  if (action === "accept_edited") payload.summary = summaryBox.value.trim();
  return runAgent(activePath(), [{ interruptId: waiting.id, status: "resolved", payload }]);
}

// -- wiring -----------------------------------------------------------------------------------

$("cc-composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text || busy()) return;
  input.value = "";
  send(text);
});
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("cc-composer").requestSubmit();
  }
});
stopButton.addEventListener("click", () => state.running && state.running.abort());
summaryBox.addEventListener("input", drawInterrupt);
for (const b of panel.querySelectorAll("button[data-action]")) b.addEventListener("click", () => answer(b.dataset.action));
$("cc-threads").addEventListener("change", (e) => { location.href = pageUrl(e.target.value); });
$("cc-new").addEventListener("click", () => { location.href = pageUrl(newThreadId()); });

if (!params.get("thread")) history.replaceState(null, "", pageUrl(state.thread));
window.convlabChat = { state, activePath, switchPath, contentText, tooLongNote }; // for tests: what the page holds
if (await loadThreads()) await load();
else draw();
