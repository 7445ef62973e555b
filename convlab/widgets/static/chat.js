// convlab ChatView's messages: draws the rows Python made and sends the
// person's intents back. Python owns the model (convlab/widgets/chat.py,
// `_Messages`): this module never changes the session, it only draws.
//
// Synced traits: `rows` (the messages shown, oldest first), `stream` (the
// reply streaming now, or {}) and `readonly` (an imported conversation:
// no Edit, no Regenerate). A row keeps its element while its id stays shown,
// so an editor the person opened survives the redraws around it.
// Sent back: {type: "edit", id, text}, {type: "regenerate", id},
// {type: "switch", id, step}; Python answers an edit with {type: "edited",
// id, ok}. Every string is set with textContent, never as HTML.

/**
 * @typedef {{id: string, role: string, color: string, copy: (string|null),
 *   text: string, k: number, n: number, regen: boolean}} Row
 * @typedef {{id: string, text: string, color: string}} Stream
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
 * The order of the rows after a redraw: which elements stay, which go.
 * @param {string[]} had ids drawn before @param {Row[]} rows @returns {{keep: Set<string>, drop: string[]}}
 */
export function diff(had, rows) {
  const keep = new Set(rows.map((r) => r.id));
  return { keep, drop: had.filter((id) => !keep.has(id)) };
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

function badge(top, role, color, id, copy) {
  const r = elem("span", "clw-badge", role);
  r.style.color = color;
  top.append(r, " ", elem("span", "clw-id", id));
  if (copy) top.append(" ", elem("span", "clw-muted", `copy of ${copy}`));
}

function render({ model, el }) {
  el.classList.add("clw-messages");
  /** @type {Map<string, {el: HTMLElement, row: Row, count: HTMLElement, navBox: HTMLElement,
   *   prev: HTMLButtonElement, next: HTMLButtonElement, editor: (HTMLElement|null)}>} */
  const views = new Map();
  let streamEl = null;
  let first = true;

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
    badge(top, row.role, row.color, row.id, row.copy);
    const navBox = elem("span", "clw-nav");
    const v = { el: div, row, count: elem("span", "clw-count"), navBox, editor: null, prev: null, next: null };
    v.prev = button("‹", "the previous sibling (look at its branch)",
                    () => send({ type: "switch", id: v.row.id, step: -1 }), "clw-arrow");
    v.next = button("›", "the next sibling (look at its branch)",
                    () => send({ type: "switch", id: v.row.id, step: 1 }), "clw-arrow");
    navBox.append(v.prev, v.count, v.next);
    top.append(navBox);
    if (!model.get("readonly")) {
      const edit = button("Edit", "send the view with this message changed: a new branch",
                          () => openEditor(v), "clw-push");
      top.append(edit);
      if (row.regen) {
        top.append(button("Regenerate", "send the view without this reply: a new reply beside it",
                          () => send({ type: "regenerate", id: v.row.id })));
      }
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
    const rows = model.get("rows") || [];
    const stream = model.get("stream");
    const atEnd = first || el.scrollHeight - el.scrollTop - el.clientHeight < STICK;
    for (const id of diff([...views.keys()], rows).drop) {
      views.get(id).el.remove();
      views.delete(id);
    }
    let at = null; // the element the next row goes after
    for (const row of rows) {
      let v = views.get(row.id);
      if (v === undefined) {
        v = make(row);
        views.set(row.id, v);
      } else if (v.row.k !== row.k || v.row.n !== row.n) {
        update(v, row);
      }
      const want = at ? at.nextSibling : el.firstChild;
      if (v.el !== want) el.insertBefore(v.el, want);
      at = v.el;
    }
    if (stream && stream.id) {
      if (!streamEl || streamEl.dataset.id !== stream.id) {
        if (streamEl) streamEl.remove();
        streamEl = elem("div", "clw-msg clw-msg-assistant clw-streaming");
        streamEl.dataset.id = stream.id;
        const top = elem("div", "clw-top clw-small");
        badge(top, "assistant", stream.color, stream.id, null);
        top.append(" ", elem("span", "clw-muted", "streaming…"));
        streamEl.append(top, elem("div", "clw-text", ""));
      }
      streamEl.lastChild.textContent = stream.text;
      el.append(streamEl);
    } else if (streamEl) {
      streamEl.remove();
      streamEl = null;
    }
    if (atEnd) el.scrollTop = el.scrollHeight;
    first = false;
  }

  function onMsg(msg) {
    if (msg && msg.type === "edited" && msg.ok) {
      const v = views.get(msg.id);
      if (v) closeEditor(v);
    }
  }

  model.on("change:rows", draw);
  model.on("change:stream", draw);
  model.on("msg:custom", onMsg);
  draw();
  return () => {
    model.off("change:rows", draw);
    model.off("change:stream", draw);
    model.off("msg:custom", onMsg);
  };
}

export default { render };
