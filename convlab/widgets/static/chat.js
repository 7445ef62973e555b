// convlab ChatView's messages: draws the rows Python made and sends the
// person's intents back. Python owns the model (convlab/widgets/chat.py,
// `_Messages`): this module never changes the session, it only draws.
//
// The rows come as custom messages: {type: "rows", base, version, order,
// set}, the ids shown in order and the rows new or changed since version
// `base` (null: everything, the answer to {type: "sync"}, which a view sends
// when it opens or misses a version). The synced trait `stream` is the reply
// streaming now ({} when none). A row keeps its element while its id stays
// shown, so an editor the person opened survives the redraws around it.
// Sent back: {type: "edit", id, text}, {type: "regenerate", id},
// {type: "switch", id, step}; Python answers an edit with {type: "edited",
// id, ok}. Every string is set with textContent, never as HTML.

/**
 * @typedef {{id: string, role: string, copy: (string|null), merged: (string|null), text: string,
 *   k: number, n: number, edit: boolean, regen: boolean}} Row
 * @typedef {{version: number, rows: Map<string, Row>, order: string[]}} Held
 * @typedef {{type: "rows", base: (number|null), version: number, order: string[], set: Row[]}} Rows
 * @typedef {{id: string, text: string}} Stream
 */

/** Pixels from the bottom within which the list follows new messages. */
export const STICK = 24;

/**
 * The ‹ k/n › arrows of a row: shown at a fork, each disabled at its end.
 * @param {Row} row @returns {{shown: boolean, label: string, prev: boolean, next: boolean}}
 */
export function nav(row) {
  return { shown: row.n > 1, label: `${row.k}/${row.n}`, prev: row.k <= 1, next: row.k >= row.n };
}

/**
 * What the view holds after a rows message, or null when the message follows a
 * version it does not hold (then it asks for everything). Pure.
 * @param {Held} held @param {Rows} msg @returns {(Held|null)}
 */
export function applyRows(held, msg) {
  if (msg.base !== null && msg.base !== held.version) return null;
  const rows = new Map(msg.base === null ? [] : held.rows);
  for (const row of msg.set) rows.set(row.id, row);
  for (const id of [...rows.keys()]) if (!msg.order.includes(id)) rows.delete(id);
  return { version: msg.version, rows, order: msg.order.filter((id) => rows.has(id)) };
}

function elem(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function button(label, title, onClick, extra = "") {
  const b = elem("button", `jupyter-button widget-button ${extra}`.trim(), label);
  b.type = "button";
  b.title = title;
  b.addEventListener("click", onClick);
  return b;
}

function badge(top, role, id, copy, merged) {
  top.append(elem("span", `clw-badge clw-role-${role}`, role), " ", elem("span", "clw-id", id));
  if (copy) top.append(" ", elem("span", "clw-muted", `copy of ${copy}`));
  if (merged) top.append(" ", elem("span", "clw-merged", `⤶ merged from ${merged}`));
}

function render({ model, el }) {
  el.classList.add("clw-messages");
  /** @type {Map<string, {el: HTMLElement, row: Row, count: HTMLElement, navBox: HTMLElement,
   *   prev: HTMLButtonElement, next: HTMLButtonElement, editor: (HTMLElement|null)}>} */
  const views = new Map();
  let streamEl = null;
  let stick = true; // follow new messages: until the person scrolls up
  /** @type {Held} */
  let held = { version: -1, rows: new Map(), order: [] };

  const send = (msg) => model.send(msg);

  function openEditor(v) {
    if (v.editor) return;
    const box = elem("div", "clw-editor");
    const area = elem("textarea", "widget-textarea");
    area.value = v.row.text;
    const buttons = elem("div", "clw-editor-buttons");
    buttons.append(
      button("Send edit", "a new branch with this message changed",
             () => send({ type: "edit", id: v.row.id, text: area.value }), "mod-primary"),
      button("Cancel", "", () => closeEditor(v)),
    );
    box.append(area, buttons);
    v.el.append(box);
    v.editor = box;
    area.focus();
  }

  function closeEditor(v) {
    if (v.editor) v.editor.remove();
    v.editor = null;
  }

  function make(row) {
    const div = elem("div", `clw-msg clw-msg-${row.role}`);
    div.dataset.id = row.id;
    const top = elem("div", "clw-top clw-small");
    badge(top, row.role, row.id, row.copy, row.merged);
    const navBox = elem("span", "clw-nav");
    const v = { el: div, row, count: elem("span", "clw-count"), navBox, editor: null, prev: null, next: null };
    v.prev = button("‹", "the previous sibling (look at its branch)",
                    () => send({ type: "switch", id: v.row.id, step: -1 }), "clw-arrow");
    v.next = button("›", "the next sibling (look at its branch)",
                    () => send({ type: "switch", id: v.row.id, step: 1 }), "clw-arrow");
    navBox.append(v.prev, v.count, v.next);
    top.append(navBox);
    if (row.edit) {
      top.append(button("Edit", "send the view with this message changed: a new branch",
                        () => openEditor(v), "clw-push"));
    }
    if (row.regen) {
      top.append(button("Regenerate", "send the view without this reply: a new reply beside it",
                        () => send({ type: "regenerate", id: v.row.id }), row.edit ? "" : "clw-push"));
    }
    div.append(top, elem("div", "clw-text", row.text));
    update(v, row);
    return v;
  }

  function update(v, row) {
    v.row = row;
    const n = nav(row);
    v.navBox.style.display = n.shown ? "" : "none";
    v.count.textContent = n.label;
    v.prev.disabled = n.prev;
    v.next.disabled = n.next;
  }

  function draw() {
    const stream = model.get("stream");
    for (const [id, v] of views) {
      if (!held.rows.has(id)) {
        v.el.remove();
        views.delete(id);
      }
    }
    let at = null; // the element the next row goes after
    for (const id of held.order) {
      const row = held.rows.get(id);
      let v = views.get(id);
      if (v === undefined) {
        v = make(row);
        views.set(id, v);
      } else if (v.row.k !== row.k || v.row.n !== row.n) {
        update(v, row);
      }
      const want = at ? at.nextSibling : el.firstChild;
      if (v.el !== want) el.insertBefore(v.el, want);
      at = v.el;
    }
    // the reply streaming now, below the rows (not once its recorded message is one of them)
    if (stream && stream.id && !views.has(stream.id)) {
      if (!streamEl || streamEl.dataset.id !== stream.id) {
        if (streamEl) streamEl.remove();
        streamEl = elem("div", "clw-msg clw-msg-assistant clw-streaming");
        streamEl.dataset.id = stream.id;
        const top = elem("div", "clw-top clw-small");
        badge(top, "assistant", stream.id, null);
        top.append(" ", elem("span", "clw-muted", "streaming…"));
        streamEl.append(top, elem("div", "clw-text", ""));
      }
      streamEl.lastChild.textContent = stream.text;
      el.append(streamEl);
    } else if (streamEl) {
      streamEl.remove();
      streamEl = null;
    }
    // after layout: a view drawn before it is on the page has no height yet
    if (stick) requestAnimationFrame(() => { el.scrollTop = el.scrollHeight; });
  }

  function onScroll() {
    stick = el.scrollHeight - el.scrollTop - el.clientHeight < STICK;
  }

  function onMsg(msg) {
    if (!msg) return;
    if (msg.type === "rows") {
      const next = applyRows(held, msg);
      if (next === null) {
        send({ type: "sync" }); // a version missed: ask for everything
        return;
      }
      held = next;
      draw();
    } else if (msg.type === "edited" && msg.ok) {
      const v = views.get(msg.id);
      if (v) closeEditor(v);
    }
  }

  model.on("change:stream", draw);
  model.on("msg:custom", onMsg);
  el.addEventListener("scroll", onScroll);
  send({ type: "sync" }); // what the chat shows now (rows sent before this view opened never reached it)
  return () => {
    model.off("change:stream", draw);
    model.off("msg:custom", onMsg);
    el.removeEventListener("scroll", onScroll);
  };
}

export default { render };
