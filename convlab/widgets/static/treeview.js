// convlab TreeView: draws the message tree that Python laid out, and sends
// intents back. Python owns the model: this module never changes the tree.
//
// The synced trait `snapshot` (see convlab/widgets/treeview.py, `layout`)
// holds only the visible rows: nodes (with row/lane), toggle markers and
// dashed links, at a `version`. After it Python sends only what changed, as
// custom messages: {type: "patch", base, version, set, drop, meta, markers?,
// links?}; a patch applies to the version it names, and a view that missed
// one asks for the whole layout again ({type: "sync"} -> {type: "snapshot"}).
// Every string from a message is set with textContent, never as HTML.

/**
 * @typedef {{id: string, parent: (string|null), row: number, lane: number,
 *   role: string, kind: string, path: boolean, head: boolean, copy: boolean,
 *   replaces: boolean, status: string, turn: (string|null), text: string,
 *   label: (string|null), match: boolean, merged: (string|null)}} TreeNode
 * @typedef {{id: (string|null), row: number, lane: number, hidden: number,
 *   expanded: boolean}} Marker
 * @typedef {{from: string, to: string, type: ("copied_from"|"replaces"|"merged_from")}} Link
 * @typedef {{rows: number, lanes: number, total: number, head: (string|null),
 *   selected: (string|null), status: string, readonly: boolean, version: number,
 *   query?: string, matches?: number, match_at?: (number|null), focus?: (string|null),
 *   marked?: (string|null), picking?: boolean, nodes: TreeNode[], markers: Marker[], links: Link[]}} TreeData
 * @typedef {{type: "patch", base: number, version: number, set: TreeNode[],
 *   drop: string[], meta: Object, markers?: Marker[], links?: Link[]}} Patch
 * @typedef {{x: number, y: number}} Point
 */

export const ROW_H = 26;
export const LANE_W = 18;
export const GUTTER = 34; // left margin where the dashed links run
export const TOP = 16;
export const TEXT_GAP = 16;
export const LABEL_CHARS = 72;
export const ID_CHARS = 12;

export const ROLE_COLORS = {
  user: "#2563eb",
  assistant: "#059669",
  system: "#64748b",
  tool: "#d97706",
  summary: "#7c3aed",
};

/** Centre of a (row, lane) cell. @param {number} row @param {number} lane @returns {Point} */
export function cell(row, lane) {
  return { x: GUTTER + lane * LANE_W + LANE_W / 2, y: TOP + row * ROW_H + ROW_H / 2 };
}

/** x where the row labels start. @param {number} lanes @returns {number} */
export function textX(lanes) {
  return GUTTER + Math.max(lanes, 1) * LANE_W + TEXT_GAP;
}

/**
 * The SVG path of a tree edge: down the parent's lane, then a short curve
 * into the child's lane just above the child (a git-graph fork).
 * @param {Point} a parent centre @param {Point} b child centre @returns {string}
 */
export function edgePath(a, b) {
  if (a.x === b.x) return `M${a.x},${a.y} L${b.x},${b.y}`;
  const bend = b.y - ROW_H * 0.75;
  return `M${a.x},${a.y} L${a.x},${bend} C${a.x},${b.y} ${a.x},${b.y} ${b.x},${b.y}`;
}

/**
 * The dashed link from a copy (or a summary root) back to its original (or
 * the head it replaced): an arc through the left gutter.
 * @param {Point} a @param {Point} b @param {number} i link index (spreads the arcs)
 * @returns {string}
 */
export function linkPath(a, b, i) {
  const gx = 6 + (i % 4) * 6;
  return `M${a.x},${a.y} C${gx},${a.y} ${gx},${b.y} ${b.x},${b.y}`;
}

/** One line of text, at most `n` characters. @param {string} text @param {number} [n] */
export function label(text, n = LABEL_CHARS) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  return flat.length > n ? flat.slice(0, n - 1) + "…" : flat;
}

/**
 * Shorten a row's message text (the `body` tspan of text `t`) so the row,
 * with its `trailing` tspans (status, "◀ head"), ends before `maxX`; the
 * hover preview still has the whole text. No-op when the row fits, or when
 * nothing is laid out yet (a hidden widget measures 0).
 * @param {SVGTextElement} t @param {SVGTSpanElement} body
 * @param {SVGTSpanElement[]} trailing @param {number} maxX
 */
export function fitLabel(t, body, trailing, maxX) {
  const full = body.textContent || "";
  let right;
  try {
    const box = t.getBBox();
    right = box.x + box.width;
  } catch {
    return;
  }
  if (!(right > 0) || right <= maxX || !full) return;
  const tail = trailing.reduce((w, sp) => w + sp.getComputedTextLength() + Number(sp.getAttribute("dx") || 0), 0);
  const room = maxX - tail - 12; // 12: the ellipsis
  let lo = 0, hi = full.length;
  while (lo < hi) { // the most characters whose end stays inside the room
    const mid = (lo + hi + 1) >> 1;
    if (body.getEndPositionOfChar(mid - 1).x <= room) lo = mid;
    else hi = mid - 1;
  }
  for (let n = lo; ; n -= 2) {
    let cut = Math.max(n, 0);
    if (cut > 0 && /[\uDC00-\uDFFF]/.test(full[cut])) cut -= 1; // never half a surrogate pair
    body.textContent = full.slice(0, cut).trimEnd() + "…";
    const box = t.getBBox();
    if (cut <= 0 || box.x + box.width <= maxX) return;
  }
}

/** A message id short enough for a row (a log's UUIDs are cut; the hover shows the whole id). @param {string} id */
export function shortId(id, n = ID_CHARS) {
  const s = String(id ?? "");
  return s.length > n ? s.slice(0, n - 4) + "…" : s;
}

/** Fill colour of a node. @param {TreeNode} n @returns {string} */
export function colorOf(n) {
  if (n.kind === "summary") return ROLE_COLORS.summary;
  return ROLE_COLORS[n.role] ?? "#94a3b8";
}

/**
 * Everything to draw, as plain data (no DOM): node centres, edges (active
 * ones last so they paint on top), dashed links, markers and the size.
 * @param {TreeData} data
 */
export function scene(data) {
  /** @type {Map<string, TreeNode & Point>} */
  const at = new Map();
  const nodes = data.nodes.map((n) => {
    const p = { ...n, ...cell(n.row, n.lane) };
    at.set(n.id, p);
    return p;
  });
  const root = cell(0, 0);
  const edges = [];
  for (const n of nodes) {
    const a = n.parent == null ? root : at.get(n.parent);
    if (!a) continue;
    edges.push({ d: edgePath(a, n), active: n.path, child: n.id, y0: a.y, y1: n.y });
  }
  edges.sort((e, f) => Number(e.active) - Number(f.active));
  const links = [];
  (data.links || []).forEach((l, i) => {
    const a = at.get(l.from), b = at.get(l.to);
    if (a && b) links.push({ d: linkPath(a, b, i), type: l.type, from: l.from, to: l.to });
  });
  const markers = (data.markers || []).map((m) => {
    const c = cell(m.row, m.lane);
    const a = m.id == null ? root : at.get(m.id) || root;
    return { ...m, ...c, d: edgePath(a, c), y0: a.y };
  });
  const tx = textX(data.lanes);
  return {
    nodes, edges, links, markers, root, textX: tx,
    width: tx + 8 * LABEL_CHARS + 120,
    height: TOP * 2 + Math.max(data.rows, 1) * ROW_H,
  };
}

/**
 * What to draw for a scroll window: the nodes, markers and edges whose rows
 * meet [top - margin, top + height + margin]. Drawing stays proportional to
 * the window, whatever the size of the tree. Dashed links are always drawn.
 * @param {ReturnType<typeof scene>} s @param {number} top @param {number} height
 * @param {number} [margin]
 */
export function inWindow(s, top, height, margin = 800) {
  const lo = top - margin, hi = top + height + margin;
  const seen = (/** @type {number} */ y) => y >= lo - ROW_H && y <= hi + ROW_H;
  const nodes = s.nodes.filter((n) => seen(n.y));
  const markers = s.markers.filter((m) => seen(m.y));
  const edges = s.edges.filter((e) => e.y0 <= hi && e.y1 >= lo);
  return { nodes, markers, edges, lo, hi };
}

/**
 * The layout after a patch: rows set (new or changed) and dropped, the header
 * replaced, markers and links replaced when the patch has them. Pure: `data`
 * is not changed. Rows come back in row order.
 * @param {TreeData} data @param {Patch} patch @returns {TreeData}
 */
export function applyPatch(data, patch) {
  const rows = new Map(data.nodes.map((n) => [n.id, n]));
  for (const id of patch.drop || []) rows.delete(id);
  for (const n of patch.set || []) rows.set(n.id, n);
  return {
    ...data,
    ...patch.meta,
    version: patch.version,
    nodes: [...rows.values()].sort((a, b) => a.row - b.row),
    markers: patch.markers ?? data.markers,
    links: patch.links ?? data.links,
  };
}

const EMPTY = { rows: 0, lanes: 0, total: 0, head: null, selected: null, status: "", readonly: false,
  version: 0, query: "", matches: 0, match_at: null, focus: null, marked: null, picking: false, nodes: [], markers: [],
  links: [] };

/**
 * What the search counter says: "3 / 7", "no match", or nothing before a search.
 * @param {TreeData} data @returns {string}
 */
export function matchCount(data) {
  if (!data.query && !data.matches) return "";
  if (!data.matches) return "no match";
  return `${(data.match_at ?? 0) + 1} / ${data.matches}`;
}

/**
 * The compare button: its text and the intent it sends (null: disabled). Python owns the
 * comparison; the page only picks the two messages. While picking (`data.picking`) a click on a
 * message picks it ({type: "pick"}) instead of looking at its branch, so picking never moves the head.
 * @param {TreeData} data
 * @returns {{text: string, intent: (Object|null)}}
 */
export function compareAction(data) {
  if (data.marked && data.selected && data.selected !== data.marked) {
    return { text: `Compare with ${shortId(data.marked)}`, intent: { type: "compare", a: data.marked, b: data.selected } };
  }
  if (data.marked) return { text: `Picked ${shortId(data.marked)}: click another (here: cancel)`, intent: { type: "mark", id: null } };
  if (data.picking) return { text: "Click a message to pick (here: cancel)", intent: { type: "picking", on: false } };
  return { text: "Pick to compare", intent: data.selected ? { type: "mark", id: data.selected } : { type: "picking", on: true } };
}

/**
 * What a click on a message sends: while picking, the pick; else a look at its branch.
 * @param {TreeData} data @param {string} id @returns {{type: string, id: string}}
 */
export function clickIntent(data, id) {
  return { type: data.picking ? "pick" : "checkout", id };
}

const SVG = "http://www.w3.org/2000/svg";

/** @param {string} tag @param {Record<string, string|number>} attrs */
function svg(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** @param {string} tag @param {string} cls @param {string} [text] */
function html(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text != null) el.textContent = text;
  return el;
}

function legend() {
  const box = html("div", "cl-legend");
  const item = (swatch, text) => {
    const it = html("span", "cl-legend-item");
    it.append(swatch, html("span", "", text));
    box.append(it);
  };
  for (const role of ["user", "assistant", "system", "tool"]) {
    const s = html("span", "cl-swatch");
    s.style.background = ROLE_COLORS[role];
    item(s, role);
  }
  const sum = html("span", "cl-swatch cl-swatch-summary");
  sum.style.background = ROLE_COLORS.summary;
  item(sum, "summary");
  item(html("span", "cl-swatch-line"), "active path");
  item(html("span", "cl-swatch-head"), "head");
  item(html("span", "cl-swatch-dash"), "copy / replaced");
  item(html("span", "cl-swatch-merged", "⤶"), "merged back");
  item(html("span", "cl-swatch-x", "✕"), "cancelled / failed");
  return box;
}

/** @param {{model: any, el: HTMLElement}} ctx */
function render({ model, el }) {
  el.classList.add("cl-tree");
  const bar = html("div", "cl-bar");
  const info = html("span", "cl-info");
  const sel = html("span", "cl-selected");
  const cont = html("button", "cl-continue", "Continue from here");
  cont.type = "button";
  cont.title = "Move the head exactly to the selected message (this may start a reply)";
  const status = html("span", "cl-status");
  const pick = html("button", "cl-compare", "Pick to compare");
  pick.type = "button";
  pick.title = "Pick two messages (the selected one, or click one) and compare their branches; picking moves nothing";
  const sum = html("button", "cl-summarize", "Summarize from here");
  sum.type = "button";
  sum.title = "Propose a summary from the selected message in the decision panel (nothing changes until you accept it)";
  bar.append(info, sel, cont, pick, sum, status);
  const finder = html("div", "cl-find");
  const box = /** @type {HTMLInputElement} */ (html("input", "cl-find-box"));
  box.type = "search";
  box.placeholder = "find in the tree (Enter)";
  box.setAttribute("aria-label", "find in the tree");
  const prev = html("button", "cl-find-prev", "‹");
  const next = html("button", "cl-find-next", "›");
  prev.type = next.type = "button";
  prev.title = "previous match";
  next.title = "next match";
  const count = html("span", "cl-find-count");
  finder.append(box, prev, next, count);
  bar.append(finder);
  const scroller = html("div", "cl-scroll");
  const tip = html("div", "cl-tip");
  tip.style.display = "none";
  el.append(bar, legend(), scroller, tip);

  const root = svg("svg", { class: "cl-svg", role: "img" });
  root.setAttribute("aria-label", "message tree");
  const gRows = svg("g", { class: "cl-rows" });
  const gEdges = svg("g", { class: "cl-edges" });
  const gLinks = svg("g", { class: "cl-links" });
  const gNodes = svg("g", { class: "cl-nodes" });
  const gText = svg("g", { class: "cl-texts" });
  root.append(gRows, gEdges, gLinks, gNodes, gText);
  scroller.append(root);

  /** @type {TreeData} */
  let data;
  /** @type {ReturnType<typeof scene>} */
  let s;
  let painted = { lo: 0, hi: -1 };
  // labels are fitted to the visible width (0: not laid out yet, draw at full width)
  let fitWidth = 0;
  let svgWidth = 0;
  function measure() {
    const w = scroller.clientWidth;
    fitWidth = s && w >= s.textX + 160 ? w : 0;
    svgWidth = s ? (fitWidth ? Math.min(fitWidth, s.width) : s.width) : 0;
    root.setAttribute("width", String(svgWidth));
  }
  let lastHead = undefined;
  /** @type {string|null} */
  let lastFocus = null;
  let focusInView = true;
  /** Scroll the focused match into the window (after the head, so a search wins). */
  function showFocus() {
    if (focusInView || !scroller.clientHeight) return;
    focusInView = true;
    const f = s.nodes.find((n) => n.id === data.focus);
    const height = scroller.clientHeight;
    if (f && (f.y < scroller.scrollTop || f.y > scroller.scrollTop + height - ROW_H)) {
      scroller.scrollTop = Math.max(0, f.y - height / 2);
    }
  }
  let headInView = true; // false until the scroll window has been moved to a new head
  /** Scroll the head into the window once the view is laid out (a hidden view has no height yet). */
  function showHead() {
    if (headInView || !scroller.clientHeight) return;
    headInView = true;
    const h = s.nodes.find((n) => n.head);
    const height = scroller.clientHeight;
    if (h && (h.y < scroller.scrollTop || h.y > scroller.scrollTop + height - ROW_H)) {
      scroller.scrollTop = Math.max(0, h.y - height / 2);
    }
  }
  const send = (type, id) => model.send({ type, id });
  // the layout this view shows: the snapshot, then each patch that follows the version it holds;
  // a view that missed one (patches sent before it rendered) asks for the whole layout once
  let held = model.get("snapshot") || EMPTY;
  let asked = false;
  const ask = () => {
    if (asked) return;
    asked = true;
    model.send({ type: "sync", version: held.version });
  };
  const onMsg = (msg) => {
    if (msg && msg.type === "snapshot") {
      held = msg.data;
      asked = false;
      draw();
    } else if (msg && msg.type === "patch") {
      if (msg.base === held.version) {
        held = applyPatch(held, msg);
        draw();
      } else if (msg.version > held.version) {
        ask();
      }
    }
  };
  cont.addEventListener("click", () => {
    if (data && data.selected) send("continue", data.selected);
  });
  box.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      ev.preventDefault();
      if (data && box.value.trim() === (data.query || "") && data.matches) model.send({ type: "step", by: ev.shiftKey ? -1 : 1 });
      else model.send({ type: "search", text: box.value });
    }
  });
  prev.addEventListener("click", () => model.send({ type: "step", by: -1 }));
  next.addEventListener("click", () => model.send({ type: "step", by: 1 }));
  sum.addEventListener("click", () => {
    if (data && data.selected) send("summarize", data.selected);
  });
  pick.addEventListener("click", () => {
    const act = data ? compareAction(data).intent : null;
    if (act) model.send(act);
  });

  function showTip(/** @type {TreeNode} */ n, /** @type {MouseEvent} */ ev) {
    tip.replaceChildren();
    const bits = [n.id, n.kind === "summary" ? "summary" : n.role];
    if (n.turn) bits.push(n.turn);
    if (n.status) bits.push(n.status);
    if (n.copy) bits.push("copy");
    if (n.label) bits.push(`label: ${n.label}`);
    if (n.merged) bits.push(`merged back from ${n.merged}`);
    tip.append(html("div", "cl-tip-head", bits.join(" · ")), html("div", "cl-tip-body", n.text || "(empty)"));
    tip.style.display = "block";
    const r = el.getBoundingClientRect();
    tip.style.left = `${Math.min(ev.clientX - r.left + 14, Math.max(r.width - 360, 0))}px`;
    tip.style.top = `${ev.clientY - r.top + 14}px`;
  }
  const hideTip = () => { tip.style.display = "none"; };

  function paintNode(/** @type {TreeNode & Point} */ n) {
    const y0 = n.y - ROW_H / 2;
    const band = svg("rect", { x: 0, y: y0, width: svgWidth, height: ROW_H,
      class: "cl-band" + (n.path ? " cl-band-path" : "") + (n.id === data.selected ? " cl-band-selected" : "")
        + (n.match ? " cl-band-match" : "") + (n.id === data.focus ? " cl-band-focus" : "")
        + (n.id === data.marked ? " cl-band-marked" : "") });
    band.setAttribute("data-id", n.id);
    gRows.append(band);

    const cls = ["cl-node", `cl-role-${n.role}`];
    if (n.path) cls.push("cl-path");
    if (n.head) cls.push("cl-head");
    if (n.kind === "summary") cls.push("cl-summary");
    if (n.copy) cls.push("cl-copy");
    if (n.status) cls.push(`cl-turn-${n.status}`);
    if (n.id === data.selected) cls.push("cl-selected-node");
    if (n.match) cls.push("cl-match");
    const g = svg("g", { class: cls.join(" "), transform: `translate(${n.x},${n.y})` });
    g.setAttribute("data-id", n.id);
    if (n.head) g.append(svg("circle", { r: 10.5, class: "cl-head-ring" }));
    const shape = n.kind === "summary"
      ? svg("rect", { x: -6, y: -6, width: 12, height: 12, rx: 2, transform: "rotate(45)", class: "cl-dot" })
      : svg("circle", { r: 6.5, class: "cl-dot" });
    shape.setAttribute("fill", colorOf(n));
    g.append(shape);
    if (n.status === "cancelled" || n.status === "failed") {
      g.append(svg("path", { d: "M-3.5,-3.5 L3.5,3.5 M3.5,-3.5 L-3.5,3.5", class: "cl-x" }));
    }
    gNodes.append(g);

    const t = svg("text", { x: s.textX, y: n.y + 4, class: "cl-label" + (n.path ? " cl-label-path" : "") + (n.head ? " cl-label-headrow" : "") });
    t.setAttribute("data-id", n.id);
    const idSpan = svg("tspan", { class: "cl-label-id" });
    idSpan.textContent = shortId(n.id);
    const roleSpan = svg("tspan", { class: "cl-label-role", dx: 8 });
    roleSpan.textContent = n.kind === "summary" ? "summary" : n.role;
    roleSpan.setAttribute("fill", colorOf(n));
    const body = svg("tspan", { class: "cl-label-text", dx: 8 });
    body.textContent = label(n.text);
    t.append(idSpan, roleSpan);
    if (n.merged) {
      const mark = svg("tspan", { class: "cl-label-merged", dx: 8 });
      mark.textContent = `⤶ merged from ${shortId(n.merged)}`;
      t.append(mark);
    }
    if (n.label) {
      const tag = svg("tspan", { class: "cl-label-tag", dx: 8 });
      tag.textContent = `[${label(n.label, 32)}]`;
      t.append(tag);
    }
    t.append(body);
    const trailing = [];
    if (n.status) {
      const st = svg("tspan", { class: `cl-label-status cl-label-${n.status}`, dx: 8 });
      st.textContent = n.status;
      trailing.push(st);
    }
    if (n.head) {
      const h = svg("tspan", { class: "cl-label-head", dx: 10 });
      h.textContent = "◀ head";
      trailing.push(h);
    }
    t.append(...trailing);
    gText.append(t);
    if (fitWidth) fitLabel(t, body, trailing, fitWidth - 10);

    for (const target of [band, g, t]) {
      target.addEventListener("click", () => model.send(clickIntent(data, n.id)));
      target.addEventListener("mousemove", (ev) => showTip(n, ev));
      target.addEventListener("mouseleave", hideTip);
    }
  }

  function paintMarker(m) {
    gEdges.append(svg("path", { d: m.d, class: "cl-edge cl-edge-marker" }));
    const g = svg("g", { class: "cl-marker", transform: `translate(${m.x},${m.y})`, tabindex: 0 });
    if (m.id != null) g.setAttribute("data-id", m.id);
    g.append(svg("rect", { x: -7, y: -7, width: 14, height: 14, rx: 3, class: "cl-marker-box" }));
    const sign = svg("text", { y: 4, class: "cl-marker-sign", "text-anchor": "middle" });
    sign.textContent = m.expanded ? "−" : "+";
    g.append(sign);
    const t = svg("text", { x: s.textX, y: m.y + 4, class: "cl-label cl-label-marker" });
    t.textContent = m.expanded ? "collapse these branches"
      : `+${m.hidden} more message${m.hidden === 1 ? "" : "s"} on other branches (click to expand)`;
    for (const target of [g, t]) target.addEventListener("click", () => send("toggle", m.id));
    gNodes.append(g);
    gText.append(t);
  }

  /** Draw what the scroll window shows (and a margin around it). */
  function paint(force = false) {
    if (!s) return;
    const height = scroller.clientHeight || 520;
    const top = scroller.scrollTop;
    if (!force && top >= painted.lo + 400 && top + height <= painted.hi - 400) return;
    const w = inWindow(s, top, height);
    painted = w;
    for (const g of [gRows, gEdges, gLinks, gNodes, gText]) g.replaceChildren();
    gNodes.append(svg("circle", { cx: s.root.x, cy: s.root.y, r: 4, class: "cl-root" }));
    const rt = svg("text", { x: s.textX, y: s.root.y + 4, class: "cl-label cl-label-root" });
    rt.textContent = "root";
    gText.append(rt);
    for (const e of w.edges) {
      gEdges.append(svg("path", { d: e.d, class: e.active ? "cl-edge cl-edge-path" : "cl-edge" }));
    }
    for (const l of s.links) {
      const p = svg("path", { d: l.d, class: `cl-link cl-link-${l.type}` });
      p.setAttribute("data-from", l.from);
      p.setAttribute("data-to", l.to);
      gLinks.append(p);
    }
    for (const n of w.nodes) paintNode(n);
    for (const m of w.markers) paintMarker(m);
  }

  function draw() {
    data = held;
    s = scene(data);
    const shown = data.nodes.length;
    info.textContent = `${data.total} message${data.total === 1 ? "" : "s"}` + (shown < data.total ? ` · ${shown} shown` : "")
      + (data.readonly ? " · read-only" : "");
    sel.textContent = data.selected ? `selected ${data.selected}` : "click a message to look at its branch";
    cont.disabled = !data.selected;
    cont.style.display = data.readonly ? "none" : "";
    sum.disabled = !data.selected;
    sum.style.display = data.readonly ? "none" : "";
    status.textContent = data.status || "";
    count.textContent = matchCount(data);
    prev.disabled = next.disabled = !data.matches;
    if (document.activeElement !== box) box.value = data.query || "";
    const act = compareAction(data);
    pick.textContent = act.text;
    pick.disabled = !act.intent;
    status.className = "cl-status" + (data.status ? " cl-status-on" : "");
    el.classList.toggle("cl-picking", Boolean(data.picking));
    measure();
    root.setAttribute("height", String(s.height));
    hideTip();
    if (data.head !== lastHead) {
      lastHead = data.head;
      headInView = false;
    }
    if ((data.focus ?? null) !== lastFocus) {
      lastFocus = data.focus ?? null;
      focusInView = lastFocus == null;
    }
    showHead();
    showFocus();
    paint(true);
  }

  let frame = 0;
  const onScroll = () => {
    if (frame) return;
    frame = requestAnimationFrame(() => { frame = 0; paint(); });
  };
  scroller.addEventListener("scroll", onScroll);
  // fit the labels again when the width changes (shown, resized, a scrollbar came)
  let seenWidth = -1;
  const resized = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => {
    if (!s || (scroller.clientWidth === seenWidth && headInView)) return;
    seenWidth = scroller.clientWidth;
    measure();
    showHead();
    showFocus();
    paint(true);
  });
  if (resized) resized.observe(scroller);
  model.on("msg:custom", onMsg);
  draw();
  model.send({ type: "sync", version: held.version }); // is the snapshot still current?
  return () => {
    model.off("msg:custom", onMsg);
    scroller.removeEventListener("scroll", onScroll);
    if (resized) resized.disconnect();
  };
}

export default { render };
