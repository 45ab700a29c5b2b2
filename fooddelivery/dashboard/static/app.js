// The dashboard's page: it reads dashboard/state once, then one event a
// second from dashboard/events, and draws everything with plain DOM and
// SVG. Controls call the admin API on the same origin.
"use strict";

// The SVG namespace, read from the page's own diagram (the HTML parser
// puts <svg> there), so the script names no address at all.
const SVG = document.getElementById("diagram").namespaceURI;

// The page's layout, which the server writes on <html>: "full" (every
// panel), "room" (for a projector: the diagram large, few numbers) or
// "traces" (for a projector: the latest traces, one as a waterfall).
const VIEW = { room: "room", traces: "traces" }[document.documentElement.dataset.view] || "full";

// The diagram, per view: its viewBox, node boxes (centre x, y; w x h),
// the menu instances' group, the edges' from and to points and where each
// edge's label sits (x, y of its first line), and where each line of a
// node's and an edge's text sits, from the box's centre and the label.
const LAYOUTS = {
  full: {
    viewBox: "0 0 900 480", nodeW: 130, nodeH: 62,
    nodes: {
      gateway: { x: 110, y: 235 }, auth: { x: 420, y: 60 }, order: { x: 420, y: 360 },
      "menu-1": { x: 760, y: 80 }, "menu-2": { x: 760, y: 150 }, "menu-3": { x: 760, y: 220 },
      courier: { x: 760, y: 330 }, payment: { x: 760, y: 425 },
    },
    menuGroup: { x: 680, y: 42, w: 160, h: 216 },
    edges: {
      "gateway->auth": { from: [175, 222], to: [355, 60], label: [265, 110] },
      "gateway->menu": { from: [175, 230], to: [680, 125], label: [560, 128] },
      "gateway->courier": { from: [175, 242], to: [695, 322], label: [330, 262] },
      "gateway->order": { from: [175, 250], to: [355, 360], label: [250, 330] },
      "order->payment": { from: [485, 372], to: [695, 425], label: [580, 435] },
      "order->menu": { from: [485, 348], to: [680, 200], label: [560, 205] },
      "order->courier": { from: [485, 360], to: [695, 338], label: [590, 360] },
    },
    nodeText: { name: -10, rate: 8, busy: 24, refused: null }, // refused: on the busy line
    edgeText: { name: -15, l1: 0, l2: 15, cause: 33 },
    stroke: 1,
  },
  room: {
    // Drawn at about one CSS px a unit in the room view's 1280x720.
    viewBox: "0 0 1000 600", nodeW: 168, nodeH: 96,
    nodes: {
      gateway: { x: 95, y: 300 }, auth: { x: 450, y: 62 }, order: { x: 450, y: 500 },
      "menu-1": { x: 880, y: 66 }, "menu-2": { x: 880, y: 168 }, "menu-3": { x: 880, y: 270 },
      courier: { x: 880, y: 410 }, payment: { x: 880, y: 530 },
    },
    menuGroup: { x: 784, y: 8, w: 192, h: 324 },
    edges: {
      "gateway->auth": { from: [179, 280], to: [366, 62], label: [262, 150] },
      "gateway->menu": { from: [179, 292], to: [784, 168], label: [450, 215] },
      "gateway->courier": { from: [179, 308], to: [796, 410], label: [450, 320] },
      "gateway->order": { from: [179, 320], to: [366, 500], label: [272, 410] },
      "order->payment": { from: [534, 515], to: [796, 530], label: [660, 545] },
      "order->menu": { from: [534, 470], to: [784, 290], label: [660, 330] },
      "order->courier": { from: [534, 500], to: [796, 420], label: [660, 462] },
    },
    nodeText: { name: -14, rate: null, busy: 14, refused: 38 },
    edgeText: { name: -18, l1: 0, l2: 0, cause: 26 },
    stroke: 1.4,
  },
};
const LAYOUT = LAYOUTS[VIEW] || LAYOUTS.full;
const NODES = LAYOUT.nodes, EDGES = LAYOUT.edges;
const SERVICES = ["gateway", "auth", "order", "payment", "menu", "courier"];
const COLORS = ["#58a6ff", "#d2a8ff", "#ffa657", "#7ee787", "#ff7b72", "#79c0ff", "#e3b341", "#f778ba"];
const colorOf = (name, list) => COLORS[list.indexOf(name) % COLORS.length];

const st = {
  history: [], changes: [], transitions: [], thresholds: { degraded: 0.05, failing: 0.5 },
  interval: 1, lastSeq: 0, keep: 300, frame: null, faultSeq: -1, faultRules: 0,
};

const $ = (id) => document.getElementById(id);
function el(tag, attrs, text) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Formats.
const pct = (v) => v == null ? "–" : (v * 100 >= 10 || v === 0 ? (v * 100).toFixed(0) : (v * 100).toFixed(1)) + "%";
const rate = (v) => (v >= 10 ? v.toFixed(0) : v.toFixed(1)) + "/s";
function dur(s) {
  if (s == null) return "–";
  if (s < 1) return (s * 1000 >= 10 ? (s * 1000).toFixed(0) : (s * 1000).toFixed(1)) + "ms";
  return s.toFixed(s >= 10 ? 0 : 1) + "s";
}
const clock = (t) => new Date(t).toLocaleTimeString([], { hour12: false });

// ---- the diagram ----

function buildDiagram() {
  const svg = $("diagram");
  svg.replaceChildren();
  svg.setAttribute("viewBox", LAYOUT.viewBox);
  const at = LAYOUT.edgeText, nt = LAYOUT.nodeText, NODE_W = LAYOUT.nodeW, NODE_H = LAYOUT.nodeH, MENU_GROUP = LAYOUT.menuGroup;
  const edges = el("svg:g", { id: "edges" });
  for (const [name, e] of Object.entries(EDGES)) {
    const g = el("svg:g", { class: "edge", "data-edge": name, "data-health": "ok", "data-idle": "true" });
    const [x0, y0] = e.from, [x1, y1] = e.to, mx = (x0 + x1) / 2;
    g.append(el("svg:path", { d: `M${x0},${y0} C${mx},${y0} ${mx},${y1} ${x1},${y1}`, "stroke-width": 2 }));
    const [lx, ly] = e.label;
    g.append(el("svg:text", { x: lx, y: ly + at.name, class: "name", "text-anchor": "middle" }, name));
    const t1 = el("svg:text", { x: lx, y: ly + at.l1, "text-anchor": "middle", class: "l1" });
    const t2 = el("svg:text", { x: lx, y: ly + at.l2, "text-anchor": "middle", class: "l2" });
    const cause = el("svg:text", { x: lx, y: ly + at.cause, "text-anchor": "middle", class: "cause" });
    g.append(t1, t2, cause);
    edges.append(g);
  }
  svg.append(edges);
  const group = el("svg:g", { class: "node group", "data-node": "menu" });
  group.append(el("svg:rect", { x: MENU_GROUP.x, y: MENU_GROUP.y, width: MENU_GROUP.w, height: MENU_GROUP.h }));
  svg.append(group);
  for (const [name, n] of Object.entries(NODES)) {
    const g = el("svg:g", { class: "node", "data-node": name });
    g.append(el("svg:rect", { x: n.x - NODE_W / 2, y: n.y - NODE_H / 2, width: NODE_W, height: NODE_H }));
    g.append(el("svg:text", { x: n.x, y: n.y + nt.name, class: "name" }, name));
    if (nt.rate != null) g.append(el("svg:text", { x: n.x, y: n.y + nt.rate, class: "stat rate-line" }, ""));
    g.append(el("svg:text", { x: n.x, y: n.y + nt.busy, class: "stat busy-line" }, ""));
    if (nt.refused != null) g.append(el("svg:text", { x: n.x, y: n.y + nt.refused, class: "stat refused-line" }, ""));
    svg.append(g);
  }
}

function drawDiagram(f) {
  for (const e of f.edges) {
    const g = document.querySelector(`#diagram [data-edge="${e.edge}"]`);
    if (!g) continue;
    const idle = e.rate === 0 && e.errorRate == null;
    g.setAttribute("data-health", e.health);
    g.setAttribute("data-idle", String(idle));
    g.setAttribute("data-rate", e.rate);
    g.setAttribute("data-error-rate", e.errorRate == null ? "" : e.errorRate);
    g.setAttribute("data-p99", e.p99 == null ? "" : e.p99);
    g.setAttribute("data-breaker-state", e.breaker || "");
    g.setAttribute("data-cause", e.cause || "");
    g.setAttribute("data-in-flight", e.inFlight);
    g.querySelector(".cause").textContent = causeText(e);
    g.querySelector("path").setAttribute("stroke-width", (LAYOUT.stroke * (2 + 3 * Math.log10(1 + e.rate))).toFixed(1));
    const l1 = g.querySelector(".l1");
    l1.replaceChildren(rate(e.rate) + " · ");
    const err = el("svg:tspan", { class: e.health === "ok" ? "" : "err-" + e.health }, pct(e.errorRate));
    // The room view has one line: no threshold (the legend's colours
    // say it), the p99 beside the rate.
    if (VIEW === "room") l1.append(err, " · p99 " + dur(e.p99));
    else l1.append(err, ` (≤${pct(st.thresholds.degraded)})`);
    let l2 = "p99 " + dur(e.p99);
    if (e.breaker) l2 += " · breaker " + badgeText(e.breaker);
    g.querySelector(".l2").textContent = l2;
  }
  for (const n of f.nodes) {
    const g = document.querySelector(`#diagram [data-node="${n.name}"]`);
    if (!g) continue;
    g.setAttribute("data-rate", n.rate);
    g.setAttribute("data-p99", n.p99 == null ? "" : n.p99);
    g.setAttribute("data-in-flight", n.inFlight);
    g.classList.toggle("busy", n.errorRate != null && n.errorRate >= st.thresholds.degraded);
    g.setAttribute("data-limit", n.limit);
    g.setAttribute("data-overloaded", n.overloaded);
    const full = n.limit > 0 && n.inFlight >= n.limit;
    g.classList.toggle("full", full);
    const stat = g.querySelector(".rate-line");
    if (stat) stat.textContent = `${rate(n.rate)} · p99 ${dur(n.p99)}`;
    const line = g.querySelector(".busy-line"), own = g.querySelector(".refused-line");
    line.replaceChildren();
    if (own) own.textContent = n.overloaded ? `OVERLOADED ${n.overloaded}` : "";
    // The room view always says how busy a node is; the full view only
    // when it is.
    if (n.inFlight || n.overloaded || own) {
      const busy = n.limit > 0 ? `${n.inFlight}/${n.limit} busy` : `${n.inFlight} busy`;
      line.append(el("svg:tspan", { class: full ? "busy full" : "busy" }, busy));
      if (n.overloaded && !own) line.append(" · ", el("svg:tspan", { class: "busy full" }, `${n.overloaded} refused`));
    }
  }
}

// causeText is an edge's cause badge: why its calls got no answer over
// the window, with how many.
function causeText(e) {
  const c = e.causes || {};
  const n = {
    TIMEOUT: c.timeouts, BREAKER_OPEN: c.breakerOpen, BULKHEAD_FULL: c.bulkheadFull,
    BUDGET_SPENT: c.budgetSpent, OVERLOADED: c.overloaded, FALLBACK: c.fallbacks,
  }[e.cause];
  if (e.cause === "WAITING") return `WAITING ${e.inFlight}`;
  if (!e.cause) return "";
  return `${e.cause.replace("_", " ")} ${n}`;
}

function badgeText(state) {
  return { closed: "CLOSED", open: "OPEN", half_open: "HALF-OPEN" }[state] || String(state).toUpperCase();
}

// ---- panels ----

function drawBreakers(f) {
  const box = $("breakers");
  if (!f.breakers.length) {
    box.replaceChildren(el("p", { class: "none" }, "no breaker in this lab setup"));
    return;
  }
  box.replaceChildren();
  for (const b of f.breakers) {
    const row = el("div", { class: "row", "data-breaker-row": b.name });
    row.append(el("span", {}, b.name));
    row.append(el("span", { class: "badge", "data-breaker": b.name, "data-state": b.state }, b.label));
    const right = el("div");
    right.append(timeline(b.name));
    const last = st.transitions.filter((t) => t.breaker === b.name).slice(-3)
      .map((t) => `${clock(t.time)} ${badgeText(t.from)}→${badgeText(t.to)}`).join("  ");
    right.append(el("div", { class: "hint" }, last || "no transition seen"));
    row.append(right);
    box.append(row);
  }
}

// timeline draws a breaker's states over the history as coloured strips.
function timeline(name) {
  const svg = el("svg:svg", { class: "timeline", viewBox: "0 0 300 16", preserveAspectRatio: "none", "data-timeline": name });
  const h = st.history;
  if (h.length < 2) return svg;
  const t0 = Date.parse(h[0].t), t1 = Date.parse(h[h.length - 1].t), span = Math.max(t1 - t0, 1);
  for (let i = 0; i < h.length - 1; i++) {
    const s = h[i].breakers && h[i].breakers[name];
    if (!s) continue;
    const x0 = (Date.parse(h[i].t) - t0) / span * 300, x1 = (Date.parse(h[i + 1].t) - t0) / span * 300;
    svg.append(el("svg:rect", { x: x0.toFixed(1), y: 0, width: Math.max(x1 - x0, 0.5).toFixed(1), height: 16, class: s }));
  }
  return svg;
}

function drawBulkheads(f) {
  const box = $("bulkheads");
  if (!f.bulkheads.length) {
    box.replaceChildren(el("p", { class: "none" }, "no bulkhead in this lab setup"));
    return;
  }
  box.replaceChildren();
  for (const b of f.bulkheads) {
    const row = el("div", { class: "row", "data-bulkhead": b.compartment, "data-in-use": b.inUse, "data-capacity": b.capacity, "data-rejections": b.rejections });
    row.append(el("span", {}, b.compartment));
    const slots = el("span", { class: "slots" }, `${b.inUse} / ${b.capacity}`);
    slots.append(el("span", { class: "unit-word" }, " slots"), el("span", { class: "sep" }, " · "),
      el("span", { class: "refused" }, `${b.rejections} refused full`));
    row.append(slots);
    const bar = el("div", { class: "bar" });
    const svg = el("svg:svg", { viewBox: "0 0 100 16", preserveAspectRatio: "none" });
    const w = b.capacity ? Math.min(100, 100 * b.inUse / b.capacity) : 0;
    svg.append(el("svg:rect", { x: 0, y: 0, width: w.toFixed(1), height: 16, class: b.inUse >= b.capacity ? "used full" : "used" }));
    bar.append(svg);
    row.append(bar);
    box.append(row);
  }
}

function drawPatterns(f) {
  const body = $("patterns").querySelector("tbody");
  body.replaceChildren();
  for (const e of f.edges) {
    const c = e.client;
    const tr = el("tr", { "data-edge-counters": e.edge });
    for (const v of [e.edge, c.attempts, c.retries, `${c.hedges} (${c.hedgesWon})`, c.fallbacks,
      c.timeouts, c.breakerOpen, c.bulkheadFull, c.budgetSpent, c.replays]) {
      tr.append(el("td", {}, String(v)));
    }
    body.append(tr);
  }
  const budgets = $("budgets");
  budgets.replaceChildren();
  for (const b of f.retryBudgets) {
    budgets.append(el("div", { class: "hint", "data-retry-budget": b.name, "data-tokens": b.tokens },
      `retry budget ${b.name}: ${b.tokens.toFixed(1)} tokens left`));
  }
  const t = f.totals;
  const twice = t.ordersChargedMoreThanOnce;
  $("charged-twice").textContent = twice == null ? "not counted" : String(twice);
  $("charged-twice").classList.toggle("bad", twice > 0);
  $("replays").textContent = t.replays;
  $("wasted").textContent = `${t.workAfterCallerLeft} units, ${t.workAfterCallerLeftSeconds.toFixed(1)}s`;
  $("wasted").classList.toggle("bad", t.workAfterCallerLeft > 0);
  $("cancelled").textContent = t.cancelled;
  $("fallbacks").textContent = t.fallbacks;
  $("hedges").textContent = `${t.hedges} / ${t.hedgesWon}`;
  $("room-hedges").textContent = `${t.hedges} / ${t.hedgesWon}`;
  $("retries").textContent = t.retries;
}

function drawHeadline(f, scenario, load) {
  const c = f.checkout;
  const v = $("checkout-success");
  v.textContent = pct(c.successRate);
  v.className = "value " + (c.successRate == null ? "" : c.successRate >= 0.99 ? "good" : c.successRate >= 0.9 ? "warn" : "bad");
  $("checkout-rate").textContent = `${rate(c.rate)} · ${c.ok} ok, ${c.failed} failed in all`;
  if (scenario) {
    $("scenario-state").textContent = scenario.state + (scenario.name ? " " + scenario.name : "");
    $("scenario").setAttribute("data-state", scenario.state);
    $("scenario-next").textContent = scenario.next ? `next in ${scenario.nextInSeconds.toFixed(0)}s: ${scenario.next}` :
      scenario.steps ? `${scenario.stepsDone}/${scenario.steps} steps, ${scenario.elapsedSeconds.toFixed(0)}s` : "";
  }
  if (load) {
    $("load-rate").textContent = load.rate + "/s";
    $("load-detail").textContent = `${load.inFlight} in flight · ${load.total.ok} ok, ${load.total.failed} failed`;
  }
  $("clock").textContent = clock(f.time);
}

// drawGameDay shows the live game day's score card (scenario.report, a
// gameday.LiveReport) while that scenario runs or after it ran.
function drawGameDay(scenario) {
  const panel = $("gameday-panel");
  const r = scenario && scenario.report;
  if (!r || !Array.isArray(r.judged)) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  $("gameday-now").textContent = r.stage ? `Now: stage ${r.number} of ${r.stages}, ${r.stage}: ${r.incident}` :
    r.state === "running" ? "Between stages: a breather before the next incident" : `The game day ${r.state} (seed ${r.seed})`;
  const body = $("gameday-card").querySelector("tbody");
  body.replaceChildren();
  for (const s of r.judged) {
    s.slos.forEach((o, i) => {
      const tr = el("tr", { "data-stage": s.name, "data-met": String(o.met) });
      tr.append(el("td", {}, i === 0 ? `${s.name} (${s.met} of ${s.of})` : ""), el("td", {}, o.slo),
        el("td", {}, o.value), el("td", { class: o.met ? "good" : "bad" }, o.met ? "yes" : "MISSED"));
      body.append(tr);
    });
  }
  $("gameday-score").textContent = r.judged.length ?
    `Score so far: ${r.score.toFixed(1)} of 100 over ${r.judged.length} of ${r.stages} stages` : "No stage judged yet";
}

function drawLabs(lines) {
  const pre = $("labs");
  pre.replaceChildren();
  for (const line of lines) {
    const m = line.trim().split(/\s+/);
    pre.append(el("div", { "data-lab": m[0] || "", "data-choice": m[2] || "" }, line));
  }
}

function addChanges(changes) {
  const list = $("changes");
  let faults = false;
  for (const c of changes) {
    if (c.seq <= st.lastSeq) continue;
    st.lastSeq = c.seq;
    st.changes.push(c);
    if (c.kind.startsWith("fault") || c.kind.startsWith("scenario")) faults = true;
    const li = el("li", { "data-seq": c.seq, "data-kind": c.kind });
    li.append(el("time", { datetime: c.time }, clock(c.time)), el("span", { class: "kind" }, c.kind), ` ${c.description} `,
      el("span", { class: "hint" }, "by " + c.by));
    list.prepend(li);
  }
  if (st.changes.length > 500) st.changes.splice(0, st.changes.length - 500);
  while (list.children.length > 200) list.lastChild.remove();
  drawLatestChange();
  if (faults) loadFaults();
}

// drawLatestChange shows the change log's latest line in the room view,
// a fault switched on marked as such.
function drawLatestChange() {
  const c = st.changes[st.changes.length - 1];
  const box = $("room-change-line");
  if (!c) {
    box.replaceChildren(el("span", { class: "none" }, "none yet"));
    return;
  }
  const chip = { "fault-set": "FAULT ON", "fault-removed": "fault off" }[c.kind] || c.kind;
  box.setAttribute("data-kind", c.kind);
  // The chip says what kind of change it is: the rest of the line need not.
  const what = c.kind.startsWith("fault") ? c.description.replace(/^fault (set|removed): /, "") : c.description;
  box.replaceChildren(el("span", { class: "chip", "data-kind": c.kind }, chip), what);
  box.title = c.description;
  $("room-change-time").textContent = clock(c.time);
  $("room-change-time").setAttribute("datetime", c.time);
}

// ---- charts ----

function markers() {
  const out = [];
  for (const c of st.changes) {
    const cls = c.kind === "fault-set" ? "on" : c.kind === "fault-removed" ? "off" : "other";
    out.push({ t: Date.parse(c.time), cls, seq: c.seq, title: c.description });
  }
  return out;
}

// chart draws series of values over the history's times in svg.
function chart(svg, series, opts) {
  svg.replaceChildren();
  const W = 600, H = 160, L = 46, R = 8, T = 8, B = 20;
  const h = st.history;
  const now = h.length ? Date.parse(h[h.length - 1].t) : Date.now();
  const span = Math.max(60000, h.length ? now - Date.parse(h[0].t) : 0);
  const t0 = now - span;
  let ymax = opts.max;
  if (ymax == null) {
    ymax = 0;
    for (const s of series) for (const v of s.values) if (v != null) ymax = Math.max(ymax, v);
    ymax = ymax > 0 ? ymax * 1.1 : 1;
  }
  const x = (t) => L + (t - t0) / span * (W - L - R);
  const y = (v) => T + (1 - Math.min(v, ymax) / ymax) * (H - T - B);
  svg.append(el("svg:line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
  svg.append(el("svg:line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
  svg.append(el("svg:text", { x: L - 4, y: T + 9, "text-anchor": "end" }, opts.fmt(ymax)));
  svg.append(el("svg:text", { x: L - 4, y: H - B, "text-anchor": "end" }, opts.fmt(0)));
  svg.append(el("svg:text", { x: L, y: H - 5 }, `-${Math.round(span / 60000)}m`));
  svg.append(el("svg:text", { x: W - R, y: H - 5, "text-anchor": "end" }, "now"));
  for (const m of markers()) {
    if (m.t < t0 || m.t > now) continue;
    const line = el("svg:line", { x1: x(m.t), x2: x(m.t), y1: T, y2: H - B, class: "marker " + m.cls, "data-change-seq": m.seq });
    line.append(el("svg:title", {}, m.title));
    svg.append(line);
  }
  for (const s of series) {
    let pts = [];
    const flush = () => {
      if (pts.length) svg.append(el("svg:polyline", { points: pts.join(" "), stroke: s.color, "data-series": s.name }));
      pts = [];
    };
    h.forEach((p, i) => {
      const v = s.values[i];
      if (v == null) { flush(); return; }
      pts.push(`${x(Date.parse(p.t)).toFixed(1)},${y(v).toFixed(1)}`);
    });
    flush();
  }
}

function drawCharts() {
  const h = st.history;
  chart($("chart-checkout"), [{ name: "checkout", color: "#7ee787", values: h.map((p) => p.checkoutSuccess) }],
    { max: 1, fmt: (v) => (v * 100).toFixed(0) + "%" });
  chart($("chart-p99"), SERVICES.map((s) => ({ name: s, color: colorOf(s, SERVICES), values: h.map((p) => p.p99 && p.p99[s]) })),
    { fmt: dur });
  const edges = Object.keys(EDGES);
  chart($("chart-rate"), edges.map((e) => ({ name: e, color: colorOf(e, edges), values: h.map((p) => p.edgeRate && p.edgeRate[e]) })),
    { fmt: (v) => v.toFixed(0) + "/s" });
  chart($("chart-errors"), edges.map((e) => ({ name: e, color: colorOf(e, edges), values: h.map((p) => p.edgeErrorRate && p.edgeErrorRate[e]) })),
    { max: 1, fmt: (v) => (v * 100).toFixed(0) + "%" });
}

function drawLegend() {
  const box = $("chart-legend");
  box.replaceChildren("services:");
  for (const s of SERVICES) box.append(key(s, colorOf(s, SERVICES)));
  box.append(" edges:");
  const edges = Object.keys(EDGES);
  for (const e of edges) box.append(key(e, colorOf(e, edges)));
}
function key(name, color) {
  const k = el("span", { class: "key" });
  const i = el("i");
  i.style.background = color;
  k.append(i, name);
  return k;
}

// ---- updates ----

function apply(frame, scenario, load) {
  st.frame = frame;
  drawDiagram(frame);
  drawBreakers(frame);
  drawBulkheads(frame);
  drawPatterns(frame);
  drawHeadline(frame, scenario, load);
  drawGameDay(scenario);
  drawCharts();
}

async function loadState() {
  const r = await fetch("dashboard/state", { cache: "no-store" });
  const s = await r.json();
  st.history = s.history || [];
  st.keep = Math.max(st.keep, st.history.length);
  st.transitions = s.transitions || [];
  st.thresholds = s.thresholds || st.thresholds;
  st.interval = s.intervalSeconds || 1;
  st.changes = [];
  st.lastSeq = 0;
  $("changes").replaceChildren();
  addChanges(s.changes || []);
  drawLabs(s.labs || []);
  if (s.frame) apply(s.frame, s.scenario, s.load);
}

function connect() {
  const es = new EventSource("dashboard/events?after=" + st.lastSeq);
  let lost = false;
  const state = $("stream-state");
  es.addEventListener("open", () => {
    state.textContent = "live";
    state.setAttribute("data-stream", "live");
    if (lost) loadState();
    lost = false;
  });
  es.addEventListener("error", () => {
    lost = true;
    state.textContent = "reconnecting";
    state.setAttribute("data-stream", "lost");
  });
  es.addEventListener("frame", (m) => {
    const ev = JSON.parse(m.data);
    const f = ev.frame;
    if (!f) return;
    const last = st.history[st.history.length - 1];
    if (!last || Date.parse(f.point.t) > Date.parse(last.t)) st.history.push(f.point);
    if (st.history.length > st.keep) st.history.splice(0, st.history.length - st.keep);
    st.transitions.push(...(f.transitions || []));
    if (st.transitions.length > 200) st.transitions.splice(0, st.transitions.length - 200);
    addChanges(ev.changes || []);
    // The applied counts grow with every request a fault meets: read
    // them again each tick while a fault is on.
    if (st.faultRules > 0) loadFaults();
    apply(f, ev.scenario, ev.load);
  });
}

// ---- controls: the admin API ----

async function admin(method, url, body) {
  const init = { method, headers: {} };
  if (method !== "GET") {
    init.headers["Content-Type"] = "application/json";
    if (body !== undefined) init.body = JSON.stringify(body);
  }
  const r = await fetch(url, init);
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(j.error ? j.error.message : `${r.status} ${r.statusText}`);
  return j;
}

function report(promise, done) {
  const out = $("control-result");
  out.className = "result";
  out.textContent = "…";
  promise.then((j) => {
    out.className = "result done";
    out.textContent = done(j);
  }, (err) => {
    out.className = "result error";
    out.textContent = err.message;
  });
}

async function loadFaults() {
  try {
    const j = await admin("GET", "admin/faults");
    st.faultRules = (j.rules || []).length;
    const specs = (j.rules || []).map((r) => r.spec);
    $("room-faults").textContent = specs.length ? "faults on now: " + specs.join(", ") : "no fault on now";
    const list = $("faults");
    list.replaceChildren();
    for (const r of j.rules || []) {
      const li = el("li", { "data-fault": r.spec });
      li.append(el("span", {}, `${r.spec}  (${r.applied} applied)`));
      const b = el("button", { type: "button" }, "remove");
      b.addEventListener("click", () => report(admin("DELETE", "admin/faults?spec=" + encodeURIComponent(r.spec)), () => "removed " + r.spec));
      li.append(b);
      list.append(li);
    }
    if (!(j.rules || []).length) list.append(el("li", { class: "none" }, "no fault injected"));
  } catch (err) {
    $("faults").replaceChildren(el("li", { class: "none" }, "faults: " + err.message));
  }
}

async function loadScenarios() {
  try {
    const j = await admin("GET", "admin/scenarios");
    const sel = $("scenario-name");
    sel.replaceChildren();
    for (const s of j.scenarios || []) {
      const o = el("option", { value: s.name, title: s.description }, `${s.name} (${Math.round(s.durationSeconds)}s)`);
      sel.append(o);
    }
  } catch (err) {
    $("scenario-name").replaceChildren(el("option", { value: "" }, "no scenarios: " + err.message));
  }
}

function wireControls() {
  $("fault-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const spec = $("fault-spec").value.trim();
    report(admin("POST", "admin/faults", { spec }), (j) => "injected " + j.rule.spec);
  });
  $("fault-remove").addEventListener("click", () => {
    const spec = $("fault-spec").value.trim();
    report(admin("DELETE", "admin/faults?spec=" + encodeURIComponent(spec)), (j) => "removed " + j.removed.map((r) => r.spec).join(", "));
  });
  $("fault-clear").addEventListener("click", () => {
    report(admin("DELETE", "admin/faults?all=true"), (j) => `removed ${j.removed.length} fault(s)`);
  });
  $("scenario-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const name = $("scenario-name").value;
    report(admin("POST", `admin/scenarios/${encodeURIComponent(name)}/start`), () => "started " + name);
  });
  $("scenario-stop").addEventListener("click", () => {
    report(admin("POST", "admin/scenario/stop"), (j) => j.stopped ? "stopped" : "no scenario was running");
  });
  $("load-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const rate = parseInt($("load-input").value, 10);
    report(admin("PUT", "admin/load", { rate }), () => `load set to ${rate} requests a second`);
  });
}

// ---- the trace view (?view=traces) ----
//
// It reads the admin API on the page's own origin, as the controls do:
// GET admin/traces?flow=&outcome=&limit= for the list, GET
// admin/traces/{id} for one trace. Any answer but a 2xx draws nothing of
// it and says why in a sentence; 501 not_wired means tracing is off.

// A trace id as the admin API lists them: 32 lowercase hex digits.
const TRACE_ID = /^[0-9a-f]{32}$/;
const TRACE_NEWEST = "newest";
const FLOWS = ["checkout", "browse"];
const OUTCOMES = ["failed", "slow", "retried", "hedged", "fallback"];
// TRACE_LIST is how many summaries the list asks for; NEWEST_TRIES how
// many of them "newest" reads for one whose root span has ended.
const TRACE_LIST = 50, NEWEST_TRIES = 5;
const ATTR = {
  attempt: "fooddelivery.attempt", backoff: "fooddelivery.backoff_ms", elapsed: "fooddelivery.elapsed_ms",
  waited: "fooddelivery.waited_ms", fallback: "fooddelivery.fallback", replica: "fooddelivery.replica",
  fault: "fooddelivery.fault", deadline: "fooddelivery.deadline_left_ms",
};

const tv = {
  flow: "", outcome: "", want: "", // the filters and the trace asked for (an id, "newest" or "")
  list: [], held: 0, open: null, listSeq: 0, openSeq: 0, poll: 0, reload: 0, reloads: 0,
};

// readAdmin GETs an admin route and returns its JSON; it throws an Error
// carrying the HTTP status and the API's error code for any other answer.
async function readAdmin(url) {
  const r = await fetch(url, { cache: "no-store", credentials: "same-origin" });
  const j = await r.json().catch(() => null);
  if (!r.ok || j === null || typeof j !== "object") {
    const e = new Error(j && j.error && j.error.message ? j.error.message : `${r.status} ${r.statusText}`);
    e.status = r.status;
    e.code = j && j.error ? j.error.code : "";
    throw e;
  }
  return j;
}

function initTraceView() {
  const q = new URLSearchParams(location.search);
  tv.flow = FLOWS.includes(q.get("flow")) ? q.get("flow") : "";
  tv.outcome = OUTCOMES.includes(q.get("outcome")) ? q.get("outcome") : "";
  const want = q.get("trace") || "";
  tv.want = want === TRACE_NEWEST || TRACE_ID.test(want) ? want : "";
  for (const b of document.querySelectorAll("#trace-flow button")) {
    b.addEventListener("click", () => setFilter("flow", b.dataset.flow));
  }
  for (const b of document.querySelectorAll("#trace-outcome button")) {
    b.addEventListener("click", () => setFilter("outcome", b.dataset.outcome));
  }
  $("trace-refresh").addEventListener("click", () => loadTraces());
  let resize = 0;
  addEventListener("resize", () => {
    clearTimeout(resize);
    resize = setTimeout(() => { if (tv.open) drawWaterfall(tv.open); }, 150);
  });
  drawFilters();
  loadTraces();
}

// setFilter changes one filter, forgets the trace asked for, and reads
// the list again.
function setFilter(which, value) {
  tv[which] = value;
  tv.want = "";
  drawFilters();
  saveURL();
  loadTraces();
}

function drawFilters() {
  for (const b of document.querySelectorAll("#trace-flow button")) b.setAttribute("aria-pressed", String(b.dataset.flow === tv.flow));
  for (const b of document.querySelectorAll("#trace-outcome button")) b.setAttribute("aria-pressed", String(b.dataset.outcome === tv.outcome));
}

// saveURL writes the filters and the trace asked for into the address,
// so that a reload or a link shows the same.
function saveURL() {
  const q = new URLSearchParams({ view: "traces" });
  if (tv.flow) q.set("flow", tv.flow);
  if (tv.outcome) q.set("outcome", tv.outcome);
  if (tv.want) q.set("trace", tv.want);
  history.replaceState(null, "", "?" + q.toString());
}

// filterText says which traces the filters keep, for a sentence.
function filterText() {
  const flow = tv.flow ? tv.flow + " " : "";
  return tv.outcome ? `${tv.outcome} ${flow}trace` : tv.flow ? `${tv.flow} trace` : "trace";
}

function traceMessage(text, state) {
  const p = $("trace-message");
  p.hidden = !text;
  p.textContent = text || "";
  $("traces-panel").dataset.state = state || "ok";
}

// traceFailed says in a sentence why the traces cannot be shown, and
// shows none of them: tracing off, or any refusal or error of the API.
function traceFailed(err, what) {
  clearTimeout(tv.poll);
  if (err.status === 501 && err.code === "not_wired") {
    traceMessage("Tracing is off in this system, so there is no trace to show: start it without -traces 0 to keep the latest traces.", "off");
  } else if (err.status === 404 && err.code === "no_such_trace") {
    traceMessage(`That trace is no longer held (only the latest are kept): pick another one on the left.`, "gone");
    return;
  } else {
    traceMessage(`The ${what} could not be read: ${err.message}`, "error");
  }
  tv.list = [];
  tv.open = null;
  $("trace-list").replaceChildren();
  $("trace-held").textContent = "";
  $("waterfall").replaceChildren();
}

async function loadTraces() {
  const seq = ++tv.listSeq;
  clearTimeout(tv.poll);
  const q = new URLSearchParams({ limit: String(TRACE_LIST) });
  if (tv.flow) q.set("flow", tv.flow);
  if (tv.outcome) q.set("outcome", tv.outcome);
  let j;
  try {
    j = await readAdmin("admin/traces?" + q.toString());
  } catch (err) {
    if (seq === tv.listSeq) traceFailed(err, "traces");
    return;
  }
  if (seq !== tv.listSeq) return;
  traceMessage("");
  tv.list = (Array.isArray(j.traces) ? j.traces : []).filter((s) => s && TRACE_ID.test(s.traceId));
  tv.held = Number(j.held) || 0;
  drawTraceList();
  if (!tv.list.length) {
    // Nothing matches yet: read again soon, so that a link from a panel
    // opens the first trace of its kind as soon as there is one.
    tv.poll = setTimeout(loadTraces, 5000);
    return;
  }
  if (tv.want === TRACE_NEWEST) openNewest();
  else if (tv.want) openTrace(tv.want);
}

function drawTraceList() {
  const list = $("trace-list");
  list.replaceChildren();
  $("trace-held").textContent = `${tv.list.length} shown of ${tv.held} held`;
  if (!tv.list.length) {
    list.append(el("li", { class: "none" }, `No ${filterText()} among the ${tv.held} held yet; the list is read again every 5 s.`));
    return;
  }
  for (const s of tv.list) {
    const b = el("button", { type: "button", class: "trace-item", "data-trace-id": s.traceId, "data-flow": s.flow,
      "data-outcomes": (s.outcomes || []).join(" "), title: `trace ${s.traceId}: ${s.root}, ${(s.services || []).join(", ")}` });
    const top = el("span", { class: "trace-top" });
    top.append(el("time", { datetime: s.start }, clock(s.start)), el("span", { class: "trace-flow" }, s.flow),
      el("span", { class: "trace-dur" }, ms(s.durationMs)));
    const bottom = el("span", { class: "trace-bottom" });
    for (const o of s.outcomes || []) bottom.append(el("span", { class: "outcome", "data-outcome": o }, o));
    bottom.append(el("span", { class: "trace-spans" }, `${s.spans} spans`));
    b.append(top, bottom);
    b.addEventListener("click", () => {
      tv.want = s.traceId;
      saveURL();
      openTrace(s.traceId);
    });
    const li = el("li");
    li.append(b);
    list.append(li);
  }
  markOpen();
}

function markOpen() {
  const id = tv.open ? tv.open.traceId : "";
  for (const b of document.querySelectorAll("#trace-list .trace-item")) b.setAttribute("aria-current", String(b.dataset.traceId === id));
}

// hasRoot reports whether t holds its root span: a trace's spans are
// recorded as they end, and the root ends last.
const hasRoot = (t) => (t.spans || []).some((s) => !s.parentId);

// openNewest opens the newest trace of the list whose root has ended,
// reading up to NEWEST_TRIES of them; the newest of all when none has.
async function openNewest() {
  const seq = ++tv.openSeq;
  let first = null;
  for (const s of tv.list.slice(0, NEWEST_TRIES)) {
    let t;
    try {
      t = (await readAdmin("admin/traces/" + s.traceId)).trace;
    } catch (err) {
      if (err.status === 404) continue; // dropped from the ring meanwhile
      if (seq === tv.openSeq) traceFailed(err, "trace");
      return;
    }
    if (seq !== tv.openSeq) return;
    if (!t || !Array.isArray(t.spans)) continue;
    first = first || t;
    if (hasRoot(t)) {
      showTrace(t);
      return;
    }
  }
  if (first) showTrace(first);
}

async function openTrace(id) {
  if (!TRACE_ID.test(id)) return;
  const seq = ++tv.openSeq;
  clearTimeout(tv.reload);
  let t;
  try {
    t = (await readAdmin("admin/traces/" + id)).trace;
  } catch (err) {
    if (seq === tv.openSeq) traceFailed(err, "trace");
    return;
  }
  if (seq !== tv.openSeq || !t || !Array.isArray(t.spans)) return;
  showTrace(t);
}

// showTrace draws t; while its root has not ended, it reads it again
// every second, 30 times at most.
function showTrace(t) {
  const changed = !tv.open || tv.open.traceId !== t.traceId;
  if (changed) tv.reloads = 0;
  tv.open = t;
  traceMessage("");
  const rows = document.querySelector("#waterfall .wf-rows");
  const scroll = !changed && rows && rows.dataset.traceId === t.traceId ? rows.scrollTop : null;
  drawWaterfall(t);
  markOpen();
  showFirstDecision(scroll);
  clearTimeout(tv.reload);
  if (!hasRoot(t) && tv.reloads < 30) {
    tv.reloads++;
    const seq = tv.openSeq;
    tv.reload = setTimeout(() => { if (seq === tv.openSeq && tv.open === t) openTrace(t.traceId); }, 1000);
  }
}

// showFirstDecision scrolls the waterfall's rows to scrollTop, or when it
// is null so that the first span with an event is in sight, a third of the
// way down: what the room came to see.
function showFirstDecision(scrollTop) {
  const rows = document.querySelector("#waterfall .wf-rows");
  if (!rows) return;
  if (scrollTop != null) {
    rows.scrollTop = scrollTop;
    return;
  }
  const first = [...rows.querySelectorAll(".wf-row")].find((r) => r.dataset.events !== "0");
  if (first && first.offsetTop + first.offsetHeight > rows.clientHeight) rows.scrollTop = first.offsetTop - rows.clientHeight / 3;
}

// ms formats a duration in milliseconds.
function ms(v) {
  if (v == null || !isFinite(v)) return "–";
  if (v >= 1000) return (v / 1000).toFixed(v >= 10000 ? 0 : 2) + " s";
  return (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + " ms";
}

// instant reads an RFC 3339 time to the microsecond (Date.parse stops at
// the millisecond), in milliseconds since the epoch.
function instant(iso) {
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(String(iso));
  if (!m) return Date.parse(iso);
  return Date.parse(m[1] + m[3]) + (m[2] ? parseFloat("0" + m[2]) * 1000 : 0);
}

// eventLabel is what the mark of event e says beside it: its name and
// the attribute that tells its decision.
function eventLabel(e) {
  const a = e.attributes || {};
  const n = e.name;
  switch (n) {
    case "retry.attempt":
      return `${n} ${a[ATTR.attempt] ?? ""}` + (a[ATTR.backoff] != null ? ` · backoff ${ms(a[ATTR.backoff])}` : "");
    case "timeout":
      return a[ATTR.elapsed] != null ? `${n} after ${ms(a[ATTR.elapsed])}` : n;
    case "bulkhead.full": case "bulkhead.waited":
      return a[ATTR.waited] != null ? `${n} ${ms(a[ATTR.waited])}` : n;
    case "fallback.served":
      return a[ATTR.fallback] ? `${n} ${a[ATTR.fallback]}` : n;
    case "hedge.sent":
      return `${n} ${a[ATTR.attempt] ?? ""}` + (a[ATTR.replica] ? ` → ${a[ATTR.replica]}` : "");
    case "hedge.won": case "hedge.cancelled":
      return a[ATTR.attempt] != null ? `${n} ${a[ATTR.attempt]}` : n;
    case "fault.injected": {
      const f = String(a[ATTR.fault] || "");
      return f ? `${n} ${f.slice(f.indexOf("=") + 1)}` : n;
    }
  }
  return n;
}

// attrLines lists attributes as "key = value" lines, for a tooltip.
function attrLines(attrs) {
  return Object.entries(attrs || {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k} = ${v}`);
}

// spanTree orders spans as a tree, each under its parent, siblings by
// start time; a span whose parent is not in the trace is a root. It
// returns [{span, depth}].
function spanTree(spans) {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const kids = new Map();
  const roots = [];
  for (const s of spans) {
    if (s.parentId && byId.has(s.parentId) && s.parentId !== s.spanId) {
      if (!kids.has(s.parentId)) kids.set(s.parentId, []);
      kids.get(s.parentId).push(s);
    } else {
      roots.push(s);
    }
  }
  const byStart = (a, b) => a._t - b._t;
  const out = [], seen = new Set();
  const walk = (s, depth) => {
    if (seen.has(s.spanId)) return;
    seen.add(s.spanId);
    out.push({ span: s, depth });
    for (const c of (kids.get(s.spanId) || []).sort(byStart)) walk(c, depth + 1);
  };
  for (const r of roots.sort(byStart)) walk(r, 0);
  // A cycle of parents leaves spans unseen: draw them as roots.
  for (const s of spans) if (!seen.has(s.spanId)) walk(s, 0);
  return out;
}

// niceStep is the tick step, 1, 2 or 5 times a power of ten, that cuts
// total into at most 6 parts.
function niceStep(total) {
  const raw = total / 6, p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

// The waterfall's rows: the bar's lane, then a lane per row of labels.
const BAR_LANE = 30, LABEL_LANE = 24, INDENT = 14;

// spanRole is what a span's bar is coloured by: "server", "client", or
// "attempt" for one send of a retried or hedged call.
const spanRole = (s) => / attempt \d+$/.test(s.name) ? "attempt" : s.kind === "server" ? "server" : "client";

// shortName is a span's name without the service it starts with, which
// its label shows beside it.
const shortName = (s) => s.service && s.name.startsWith(s.service + " ") ? s.name.slice(s.service.length + 1) : s.name;

function drawWaterfall(t) {
  const box = $("waterfall");
  const spans = (t.spans || []).filter((s) => s && typeof s.spanId === "string");
  for (const s of spans) {
    s._t = instant(s.start);
    s._end = s._t + (Number(s.durationMs) || 0);
  }
  let t0 = Infinity, t1 = -Infinity, events = 0, errors = 0;
  for (const s of spans) {
    t0 = Math.min(t0, s._t);
    t1 = Math.max(t1, s._end);
    for (const e of s.events || []) t1 = Math.max(t1, instant(e.time));
    events += (s.events || []).length;
    if (s.error) errors++;
  }
  const total = Math.max(t1 - t0, 0.001);
  const pos = (ts) => Math.min(100, Math.max(0, (ts - t0) / total * 100));
  const rows = spanTree(spans);
  const maxDepth = rows.reduce((m, r) => Math.max(m, r.depth), 0);

  const root = spans.find((s) => !s.parentId);
  const head = el("div", { class: "wf-head" });
  head.append(el("span", { class: "wf-title" }, root ? root.name : "in flight: the spans that have ended so far"),
    el("span", { class: "wf-facts" }, `${ms(total)} · ${spans.length} spans · ${events} events · ${errors} in error`),
    el("span", { class: "wf-id", title: "trace id" }, t.traceId));
  const axis = el("div", { class: "wf-axis" });
  axis.append(el("div", { class: "wf-axis-name" }, "service · span"), el("div", { class: "wf-dur" }, "took"));
  const ticks = el("div", { class: "wf-ticks" });
  const step = niceStep(total), fracs = [];
  for (let v = 0; v <= total + 1e-9; v += step) fracs.push(v);
  for (const v of fracs) {
    const f = v / total * 100;
    const tick = el("span", { class: "wf-tick" + (v === 0 ? " first" : f > 92 ? " last" : "") }, v === 0 ? "0" : ms(v));
    tick.style.left = f.toFixed(3) + "%";
    ticks.append(tick);
  }
  axis.append(ticks);

  const body = el("div", { class: "wf-rows", "data-trace-id": t.traceId });
  const grid = el("div", { class: "wf-grid" });
  for (const v of fracs) {
    const line = el("i");
    line.style.setProperty("--f", (v / total).toFixed(5));
    grid.append(line);
  }
  body.append(grid);
  const placed = []; // per row: its track and the labels to place on it
  for (const { span: s, depth } of rows) {
    const role = spanRole(s);
    const row = el("div", { class: "wf-row", "data-span-id": s.spanId, "data-kind": s.kind || "", "data-role": role, "data-depth": depth,
      "data-error": s.error ? "true" : "false", "data-events": (s.events || []).length });
    const label = el("div", { class: "wf-label", title: `${s.service} · ${s.name}` + (s.error ? `\nerror: ${s.error}` : "") });
    label.style.paddingLeft = (depth * INDENT) + "px";
    label.append(el("span", { class: "wf-service" }, s.service || "?"), " ", el("span", { class: "wf-name" }, shortName(s)));
    const dur = el("div", { class: "wf-dur" }, ms(s.durationMs));
    const track = el("div", { class: "wf-track" });
    const bar = el("div", { class: "wf-bar", "data-span-id": s.spanId, "data-kind": s.kind || "", "data-role": role, "data-error": s.error ? "true" : "false",
      title: [`${s.service} · ${s.name}`, `${s.kind} span, ${ms(s.durationMs)}, from +${ms(s._t - t0)}`,
        ...(s.error ? [`error: ${s.error}`] : []), ...attrLines(s.attributes)].join("\n") });
    const left = pos(s._t);
    bar.style.left = left.toFixed(3) + "%";
    bar.style.width = `max(4px, ${Math.max(0, Math.min(100 - left, (s._end - s._t) / total * 100)).toFixed(3)}%)`;
    track.append(bar);
    const labels = [];
    for (const e of s.events || []) {
      const at = instant(e.time), x = pos(at);
      const title = [`${e.name} at +${ms(at - t0)}`, `on ${s.service} · ${s.name}`, ...attrLines(e.attributes)].join("\n");
      const mark = el("div", { class: "wf-mark", "data-event": e.name, "data-span-id": s.spanId, title, role: "img", "aria-label": eventLabel(e) });
      mark.style.left = x.toFixed(3) + "%";
      const text = el("span", { class: "wf-mark-label", "data-event": e.name, title }, eventLabel(e));
      track.append(mark, text);
      labels.push({ x, node: text });
    }
    const left_ms = s.attributes && s.attributes[ATTR.deadline];
    if (left_ms != null && isFinite(left_ms)) {
      const text = el("span", { class: "wf-deadline", title: `the request arrived with ${ms(Number(left_ms))} of its deadline left (X-Timeout-Ms)` },
        `deadline ${ms(Number(left_ms))} left`);
      track.append(text);
      labels.push({ x: left, node: text, beside: bar });
      const due = s._t + Number(left_ms);
      if (due <= t1) {
        const line = el("div", { class: "wf-deadline-line", title: `the deadline of ${s.service} · ${s.name}` });
        line.style.left = pos(due).toFixed(3) + "%";
        track.append(line);
      }
    }
    row.append(label, dur, track);
    body.append(row);
    placed.push({ track, labels });
  }
  const legend = el("div", { class: "wf-legend" });
  legend.append(el("span", { class: "wf-key", "data-role": "server" }, "server span"), el("span", { class: "wf-key", "data-role": "client" }, "client span"),
    el("span", { class: "wf-key", "data-role": "attempt" }, "attempt (retry, hedge)"), el("span", { class: "wf-key", "data-error": "true" }, "in error"),
    el("span", { class: "wf-key mark" }, "a pattern's decision (hover it)"));
  box.replaceChildren(head, axis, body, legend);
  box.dataset.traceId = t.traceId;
  box.dataset.spans = String(spans.length);
  box.dataset.events = String(events);
  box.style.setProperty("--depth", String(maxDepth));
  placeLabels(placed);
}

// placeLabels sets each label beside its mark, below the bar, in the
// first lane where it overlaps no other label of its row (flipped to end
// at its mark when it would leave the track), and makes each row as tall
// as its lanes. A label beside a bar (the deadline) goes on the bar's own
// lane, after the bar or before it, where there is room.
function placeLabels(placed) {
  for (const { track, labels } of placed) {
    const w = track.clientWidth || 1;
    const lanes = []; // the right end of the last label in each lane, px
    for (const l of labels.sort((a, b) => a.x - b.x)) {
      const lw = l.node.offsetWidth;
      if (l.beside) {
        const b0 = l.beside.offsetLeft, b1 = b0 + l.beside.offsetWidth;
        const x = b1 + 6 + lw <= w ? b1 + 6 : b0 - 6 - lw >= 0 ? b0 - 6 - lw : null;
        if (x !== null) {
          l.node.style.left = x.toFixed(1) + "px";
          l.node.style.top = "4px";
          continue;
        }
      }
      let x = l.x / 100 * w;
      if (x + lw > w) x = Math.max(0, x - lw);
      let lane = lanes.findIndex((end) => end + 8 <= x);
      if (lane < 0) {
        lane = lanes.length;
        lanes.push(0);
      }
      lanes[lane] = x + lw;
      l.node.style.left = x.toFixed(1) + "px";
      l.node.style.top = (BAR_LANE + lane * LABEL_LANE) + "px";
    }
    track.style.height = (BAR_LANE + lanes.length * LABEL_LANE + (lanes.length ? 4 : 0)) + "px";
  }
}

async function main() {
  buildDiagram();
  drawLegend();
  wireControls();
  if (VIEW === "traces") initTraceView();
  try {
    await loadState();
  } catch (err) {
    $("stream-state").textContent = "no state";
  }
  loadFaults();
  loadScenarios();
  connect();
}

main();
