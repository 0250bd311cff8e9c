// linerate ui: the page. Plain script, no libraries: the form posts a test to /api/tests, its
// events (/api/tests/ID/events) move the charts and fill the interval table, the summary ends
// it; the runs view lists /api/runs and shows one run. Charts are SVG drawn here. The live
// chart and the table keep a bounded window, so a long test does not grow the page.
// Text from the server is only ever set as text (textContent), never parsed as HTML.
"use strict";

const WINDOW = 300; // intervals kept for the live chart and table
const COLORS = ["#2457c5", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285"];
const SVG = "http://www.w3.org/2000/svg";

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs, ...children) {
  const node = tag.startsWith("svg:")
    ? document.createElementNS(SVG, tag.slice(4))
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children) node.append(c instanceof Node ? c : String(c));
  return node;
}

// ---- numbers as people read them ----

function si(v, unit) {
  if (v === null || v === undefined || !isFinite(v)) return "–";
  const steps = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "K"]];
  for (const [n, p] of steps) {
    if (Math.abs(v) >= n) return (v / n).toFixed(2) + " " + p + unit;
  }
  return (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2)) + " " + unit;
}
const bps = (v) => si(v, "bit/s");
// An axis label: three significant digits at most.
function axis(v, unit) {
  const steps = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "K"]];
  for (const [n, p] of steps) if (Math.abs(v) >= n) return +(v / n).toPrecision(3) + " " + p + unit;
  return +v.toPrecision(3) + (unit ? " " + unit : "");
}
const num = (v, d = 1) => (v === null || v === undefined || !isFinite(v) ? "–" : Number(v).toFixed(d));
const us = (v) => (v === null || v === undefined ? "–" : num(v, 1) + " µs");
const flowLabel = (f) => ({ client_to_server: "c→s", server_to_client: "s→c" }[f] || f);
const when = (ms) => new Date(ms).toLocaleString();

// ---- the API ----

async function api(path, options) {
  const res = await fetch(path, Object.assign({ credentials: "same-origin" }, options));
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text }; }
  if (!res.ok) throw new Error((body && body.error) || res.status + " " + res.statusText);
  return body;
}

// ---- charts ----

// A line chart of series [{label, points: [[x, y], …]}] into an <svg> of viewBox 640×240.
function drawChart(svg, series, format) {
  svg.replaceChildren();
  const W = 640, H = 240, L = 72, R = 22, T = 10, B = 40;
  const all = series.flatMap((s) => s.points).filter((p) => isFinite(p[1]));
  if (all.length === 0) {
    svg.append(el("svg:text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "waiting for the first interval…"));
    return;
  }
  const x0 = Math.min(...all.map((p) => p[0])), x1 = Math.max(...all.map((p) => p[0]), x0 + 1);
  const top = niceMax(Math.max(...all.map((p) => p[1]), 0));
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => H - B - (y / top) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4, y = sy(v);
    svg.append(el("svg:line", { x1: L, x2: W - R, y1: y, y2: y, class: i ? "grid" : "axis" }));
    svg.append(el("svg:text", { x: L - 6, y: y + 4, "text-anchor": "end" }, format(v)));
  }
  for (let i = 0; i <= 5; i++) {
    const v = x0 + ((x1 - x0) * i) / 5;
    svg.append(el("svg:text", { x: sx(v), y: H - B + 16, "text-anchor": "middle" }, v.toFixed(1) + " s"));
  }
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = s.points.filter((p) => isFinite(p[1])).map((p) => sx(p[0]).toFixed(1) + "," + sy(p[1]).toFixed(1));
    svg.append(el("svg:polyline", { points: pts.join(" "), class: "series", stroke: color }));
    const lx = L + 10 + i * 120;
    svg.append(el("svg:rect", { x: lx, y: H - 14, width: 10, height: 3, fill: color }));
    svg.append(el("svg:text", { x: lx + 14, y: H - 10 }, s.label));
  });
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// ---- what each kind shows ----

const isRr = (kind) => kind === "tcp_rr" || kind === "udp_rr" || kind === "tcp_crr";

// The charts' series of a list of interval samples: [main, side, side caption, side format].
function seriesOf(kind, samples) {
  const flows = new Map();
  for (const s of samples) for (const f of s.flows) {
    if (!flows.has(f.flow)) flows.set(f.flow, []);
    flows.get(f.flow).push([s.end_s, f]);
  }
  const per = (pick) => [...flows].map(([flow, pts]) => ({
    label: flowLabel(flow), points: pts.map(([t, f]) => [t, pick(f)]),
  }));
  if (isRr(kind)) {
    const pct = (name) => ({ label: name, points: samples.map((s) => [s.end_s, s.flows[0] && s.flows[0].rr ? s.flows[0].rr[name + "_us"] : NaN]) });
    return [per((f) => (f.rr ? f.rr.transactions_per_s : NaN)), [pct("p50"), pct("p99")], "Round trip (µs)", (v) => axis(v, "µs")];
  }
  if (kind === "udp_stream") {
    return [per((f) => f.throughput_bps), per((f) => (f.udp ? f.udp.packets_lost : NaN)), "Datagrams lost per interval", (v) => axis(v, "")];
  }
  return [per((f) => f.throughput_bps), per((f) => (f.tcp_info ? f.tcp_info.rtt_us : NaN)), "Sender's smoothed RTT (µs)", (v) => axis(v, "µs")];
}

// The interval table's header and one sample's rows.
function tableHead(kind) {
  if (isRr(kind)) return ["interval", "dir", "trans/s", "p50", "p99"];
  if (kind === "udp_stream") return ["interval", "dir", "received", "sent/s", "recv/s", "lost", "ooo", "jitter"];
  return ["interval", "dir", "sent", "received", "rate", "retr", "cwnd", "rtt"];
}

function tableRows(kind, s) {
  const span = num(s.start_s, 2) + " – " + num(s.end_s, 2);
  return s.flows.map((f) => {
    if (isRr(kind)) return [span, flowLabel(f.flow), num(f.rr && f.rr.transactions_per_s, 0), us(f.rr && f.rr.p50_us), us(f.rr && f.rr.p99_us)];
    if (kind === "udp_stream") {
      const u = f.udp || {};
      return [span, flowLabel(f.flow), bps(f.throughput_bps), num(u.pps_sent, 0), num(u.pps_received, 0), u.packets_lost, u.packets_out_of_order, us(u.jitter_us)];
    }
    const t = f.tcp_info || {};
    return [span, flowLabel(f.flow), si(f.sender_bytes, "B"), si(f.receiver_bytes, "B"), bps(f.throughput_bps), t.retransmits ?? "–", t.snd_cwnd_segments ?? "–", us(t.rtt_us)];
  });
}

// A run's summary as a grid of figures and its verdicts.
function showSummary(box, kind, summary) {
  box.replaceChildren();
  const figures = [["throughput", bps(summary.throughput_bps)], ["seconds", num(summary.duration_s, 2)],
    ["client CPU", num(summary.local_cpu_pct) + " %"], ["server CPU", num(summary.remote_cpu_pct) + " %"]];
  if (summary.retransmits !== null && summary.retransmits !== undefined) figures.push(["retransmits", summary.retransmits]);
  if (summary.rtt_us) figures.push(["RTT", us(summary.rtt_us)]);
  if (summary.udp) {
    figures.push(["loss", num(summary.udp.loss_pct, 3) + " %"], ["jitter", us(summary.udp.jitter_us)],
      ["datagrams/s received", num(summary.udp.pps_received, 0)]);
  }
  if (summary.rr) {
    figures.push(["transactions/s", num(summary.rr.transactions_per_s, 0)]);
    const l = summary.rr.latency_us;
    if (l) figures.push(["p50", us(l.p50)], ["p99", us(l.p99)], ["p99.9", us(l.p999)]);
    if (summary.rr.connections_per_s) figures.push(["connections/s", num(summary.rr.connections_per_s, 0)]);
  }
  if (summary.interrupted) figures.push(["", "stopped early"]);
  const grid = el("div", { class: "figures" });
  for (const [name, value] of figures) grid.append(el("div", { class: "figure" }, el("b", {}, value), el("span", {}, name)));
  box.append(grid);
  for (const f of summary.flows || []) {
    if (f.limited_by) {
      const v = f.limited_by;
      box.append(el("div", { class: "verdict" }, flowLabel(f.flow) + " limited by " + v.verdict.replace(/_/g, " ") + ": " + v.evidence + (v.hint ? " — " + v.hint : "")));
    }
  }
}

// ---- the run view ----

const live = { source: null, id: null, kind: null, samples: [] };

function formJson(form) {
  const data = new FormData(form);
  const test = { kind: data.get("kind") };
  for (const name of ["host", "rate", "length", "auth_key"]) {
    const v = String(data.get(name) || "").trim();
    if (v) test[name] = v;
  }
  for (const name of ["time", "parallel"]) {
    const v = String(data.get(name) || "").trim();
    if (v) test[name] = Number(v);
  }
  const direction = data.get("direction");
  if (direction) test[direction] = true;
  const tags = String(data.get("tags") || "").split(",").map((t) => t.trim()).filter(Boolean);
  if (tags.length) test.tags = tags;
  const extra = String(data.get("extra") || "").trim();
  if (extra) Object.assign(test, JSON.parse(extra));
  return test;
}

function setState(text, error) {
  const s = $("#run-state");
  s.textContent = text;
  s.className = error ? "state error" : "state";
}

async function startTest(event) {
  event.preventDefault();
  let test;
  try { test = formJson(event.target); } catch (e) { setState("More options: " + e.message, true); return; }
  setState("starting…");
  $("#start").disabled = true;
  try {
    const { id } = await api("/api/tests", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(test),
    });
    follow(id);
  } catch (e) {
    setState(e.message, true);
    $("#start").disabled = false;
  }
}

// Follows test `id`'s events: a replay from its start, then live.
function follow(id) {
  if (live.source) live.source.close();
  Object.assign(live, { id, kind: null, samples: [] });
  $("#live").hidden = false;
  $("#summary").replaceChildren();
  $("#stop").disabled = false;
  $("#start").disabled = true;
  const source = new EventSource("/api/tests/" + id + "/events");
  live.source = source;
  source.addEventListener("started", (e) => started(JSON.parse(e.data)));
  source.onmessage = (e) => interval(JSON.parse(e.data));
  source.addEventListener("summary", (e) => ended(source, JSON.parse(e.data), null));
  source.addEventListener("error", (e) => {
    if (e.data) ended(source, null, JSON.parse(e.data).error);
    else if (source.readyState === EventSource.CLOSED) ended(source, null, "the connection to the UI was lost");
  });
}

function started(info) {
  // A reconnecting EventSource replays from the start: begin again.
  live.kind = info.spec.kind;
  live.samples = [];
  const spec = info.spec;
  $("#live-title").textContent = "test " + info.id + ": linerate " + info.command.join(" ") +
    " — server " + (info.server.hostname || "?") + " (linerate " + info.server.version + ", " + info.server.cores + " cores), " + spec.streams + " stream(s)";
  $("#chart-main-caption").textContent = isRr(live.kind) ? "Transactions per second" : "Throughput (receiver goodput)";
  $("#intervals thead").replaceChildren(el("tr", {}, ...tableHead(live.kind).map((h) => el("th", {}, h))));
  $("#intervals tbody").replaceChildren();
  redraw();
  setState("running");
}

function interval(sample) {
  live.samples.push(sample);
  if (live.samples.length > WINDOW) live.samples.splice(0, live.samples.length - WINDOW);
  const body = $("#intervals tbody");
  for (const row of tableRows(live.kind, sample)) {
    body.append(el("tr", {}, ...row.map((v, i) => el("td", { class: i > 1 ? "num" : "" }, v))));
  }
  while (body.rows.length > WINDOW * 2) body.deleteRow(0);
  redraw();
}

function redraw() {
  const [main, side, caption, format] = seriesOf(live.kind, live.samples);
  drawChart($("#chart-main"), main, (v) => axis(v, isRr(live.kind) ? "/s" : "bit/s"));
  $("#chart-side-caption").textContent = caption;
  drawChart($("#chart-side"), side, format);
}

function ended(source, result, error) {
  source.close();
  if (live.source === source) live.source = null;
  $("#stop").disabled = true;
  $("#start").disabled = false;
  if (error) { setState(error, true); return; }
  setState((result.interrupted ? "stopped early; " : "finished; ") + "stored as run #" + result.run_id);
  showSummary($("#summary"), result.kind, result.summary);
  loadRuns();
}

async function stopTest() {
  if (live.id === null) return;
  $("#stop").disabled = true;
  setState("stopping…");
  try { await api("/api/tests/" + live.id + "/stop", { method: "POST" }); } catch (e) { setState(e.message, true); }
}

// ---- the runs view ----

async function loadRuns(event) {
  if (event) event.preventDefault();
  const data = new FormData($("#runs-filter"));
  const query = new URLSearchParams();
  for (const [k, v] of data) if (String(v).trim()) query.append(k, String(v).trim());
  const state = $("#runs-state");
  try {
    const runs = await api("/api/runs?" + query);
    state.textContent = runs.length + " run(s)";
    state.className = "state";
    const body = $("#runs tbody");
    body.replaceChildren();
    for (const r of runs.slice().reverse()) {
      const tags = Object.entries(r.tags || {}).map(([k, v]) => k + "=" + v).join(", ");
      const row = el("tr", {}, el("td", {}, "#" + r.id), el("td", {}, when(r.started_at_unix_ms)), el("td", {}, r.kind),
        el("td", {}, r.target), el("td", {}, tags), el("td", { class: "num" }, bps(r.throughput_bps)),
        el("td", { class: "num" }, num(r.transactions_per_s, 0)), el("td", { class: "num" }, us(r.p99_us)),
        el("td", { class: "num" }, r.loss_pct === null ? "–" : num(r.loss_pct, 3) + " %"));
      row.addEventListener("click", () => showRun(r.id, row));
      body.append(row);
    }
  } catch (e) {
    state.textContent = e.message;
    state.className = "state error";
  }
}

async function showRun(id, row) {
  for (const r of document.querySelectorAll("#runs tr.selected")) r.classList.remove("selected");
  if (row) row.classList.add("selected");
  history.replaceState(null, "", "#runs/" + id);
  try {
    const run = await api("/api/runs/" + id);
    const rec = run.record;
    $("#run-detail").hidden = false;
    $("#detail-title").textContent = "run #" + run.id + ": " + rec.kind + " to " + rec.target + ", " + when(rec.started_at_unix_ms);
    const [main] = seriesOf(rec.kind, rec.intervals);
    drawChart($("#chart-detail"), main, (v) => axis(v, isRr(rec.kind) ? "/s" : "bit/s"));
    showSummary($("#detail-summary"), rec.kind, rec.summary);
  } catch (e) {
    $("#runs-state").textContent = e.message;
  }
}

// ---- start ----

function showView(name) {
  if (location.hash.split("/")[0] !== "#" + name) history.replaceState(null, "", "#" + name);
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.view === name);
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== "view-" + name;
  if (name === "runs") loadRuns();
}

document.querySelectorAll(".tab").forEach((tab) => tab.addEventListener("click", () => showView(tab.dataset.view)));
$("#run-form").addEventListener("submit", startTest);
$("#stop").addEventListener("click", stopTest);
$("#runs-filter").addEventListener("submit", loadRuns);

// #runs lists the stored runs, #runs/ID shows one: links to a view can be kept.
const [view, runId] = location.hash.slice(1).split("/");
if (view === "runs") {
  showView("runs");
  if (runId) showRun(runId, null);
}

// A test still running (the page was reloaded) is followed again.
api("/api/tests").then((tests) => {
  const running = tests.filter((t) => t.state === "running" || t.state === "starting").pop();
  if (running) follow(running.id);
}).catch(() => {});
