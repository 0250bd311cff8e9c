// A series of runs followed live: a sweep's points, an RFC 2544 search's frame sizes, a packet
// rate matrix's cells, a repetition's runs (a table of points and a bar chart of the main figure
// against each point's label), or a mesh's cells (a hosts × hosts matrix). Each `point` event
// adds one; the `begin` event says how many to expect. docs/RESULTS.md gives each point's JSON.

import { $, el, bps, int, us, pct, num, finite, axis, download } from "./util.js";
import { drawBars, usAxis } from "./chart.js";

// The columns a point may have: [key, header, format]; a column shows once a point has it.
const COLUMNS = [
  ["throughput_bps", "throughput", bps],
  ["throughput_fps", "frames/s", int],
  ["line_rate_pct", "% of line", (v) => pct(v)],
  ["pps_sent", "sent/s", int],
  ["pps_received", "received/s", int],
  ["line_rate_ratio", "of line rate", (v) => pct(v * 100)],
  ["transactions_per_s", "trans/s", int],
  ["connections_per_s", "conn/s", int],
  ["rtt_p50_us", "p50 RTT", us],
  ["rtt_p99_us", "p99 RTT", us],
  ["loaded_rtt_p50_us", "loaded p50 RTT", us],
  ["loaded_rtt_p99_us", "loaded p99 RTT", us],
  ["loss_pct", "loss", (v) => pct(v, 3)],
  ["local_cpu_pct", "client CPU", (v) => pct(v)],
  ["remote_cpu_pct", "server CPU", (v) => pct(v)],
  ["retransmits", "retr", int],
  ["end", "end", String],
  ["runs", "runs", String],
  ["error", "error", String],
];
// The figure the chart shows: the first of these any point has.
const MAIN = ["throughput_bps", "pps_received", "transactions_per_s", "connections_per_s", "rtt_p50_us"];
const FROM_SUMMARY = ["throughput_bps", "transactions_per_s", "connections_per_s", "loss_pct", "local_cpu_pct",
  "remote_cpu_pct", "retransmits", "pps_sent", "pps_received"];

/** A point's figures, flat: a sweep point or a frame size as they are; a run by its summary. */
export function flatten(data) {
  const d = Object.assign({}, data);
  // A repetition's run: its record. (A pps cell's `run` is its record too, but the cell
  // carries its own figures, and its main one is the packet rate, not the record's goodput.)
  const record = data.record;
  const summary = data.summary && typeof data.summary === "object" && "duration_s" in data.summary
    ? data.summary : record && record.summary;
  if (summary) {
    for (const k of FROM_SUMMARY) if (d[k] === undefined) d[k] = summary[k];
    if (summary.latency_us && d.rtt_p50_us === undefined) {
      d.rtt_p50_us = summary.latency_us.p50;
      d.rtt_p99_us = summary.latency_us.p99;
    }
  }
  if (data.latency && d.rtt_p50_us === undefined) { // an RFC 2544 answer's latency run
    d.rtt_p50_us = data.latency.rtt_p50_us;
    d.rtt_p99_us = data.latency.rtt_p99_us;
  }
  const ids = data.runs ? data.runs.map((r) => r.run_id)
    : data.run_ids || [data.run_id ?? (typeof data.run === "number" ? data.run : null)];
  d.runs = ids.filter((x) => x !== null && x !== undefined).map((x) => "#" + x).join(" ") || undefined;
  if (d.end === null) d.end = undefined;
  return d;
}

const present = (v) => v !== undefined && v !== null && v !== "";

/** The series view in its box: `begin`, then `point` per point, then `finish`. */
export class SeriesView {
  constructor() {
    this.box = $("#series");
    this.reset();
  }

  reset() {
    this.info = null;
    this.points = [];
    this.hosts = [];
    this.cells = new Map();
    this.box.hidden = true;
    $("#series-doc").replaceChildren();
  }

  begin(info) {
    this.reset();
    this.info = info;
    this.box.hidden = false;
    this.hosts = (info.hosts || []).slice();
    $("#series-title").textContent = info.title || "series";
    this.render();
  }

  point(p) {
    if (!this.info) this.begin({ title: "series", points: null });
    const data = p.data || {};
    if (present(data.from) && present(data.to)) {
      for (const h of [data.from, data.to]) if (!this.hosts.includes(h)) this.hosts.push(h);
      this.cells.set(data.from + "\n" + data.to, data);
    }
    this.points.push({ index: p.index, label: p.label ?? String(p.index), data: flatten(data) });
    this.render();
  }

  render() {
    const mesh = this.hosts.length > 0;
    const of = this.info && finite(this.info.points) ? " of " + this.info.points : "";
    // planned_s: seconds in all, or each point's (a sweep's).
    const planned = this.info && [].concat(this.info.planned_s ?? []).reduce((a, b) => a + (finite(b) ? b : 0), 0);
    const secs = planned ? " (about " + num(planned, 0) + " s planned)" : "";
    $("#series-progress").textContent = this.points.length + of + (mesh ? " cells" : " points") + " done" + secs;
    $("#points-part").hidden = mesh;
    $("#mesh-part").hidden = !mesh;
    if (mesh) this.renderMesh(); else this.renderPoints();
  }

  renderPoints() {
    const cols = COLUMNS.filter(([k]) => this.points.some((p) => present(p.data[k])));
    const table = $("#points-table");
    table.tHead.replaceChildren(el("tr", {}, el("th", {}, "point"), ...cols.map(([, h]) => el("th", { class: "num" }, h))));
    table.tBodies[0].replaceChildren(...this.points.map((p) => el("tr", {},
      el("td", {}, p.label + (p.data.interrupted ? " *" : "")),
      ...cols.map(([k, , f]) => el("td", { class: "num" }, present(p.data[k]) ? f(p.data[k]) : "–")))));
    const main = MAIN.find((k) => this.points.some((p) => finite(p.data[k])));
    const col = COLUMNS.find(([k]) => k === main);
    $("#points-caption").textContent = col ? col[1] + " per point" : "figure per point";
    const svg = $("#chart-points");
    const format = main === "throughput_bps" ? (v) => axis(v, "bit/s") : main === "rtt_p50_us" ? usAxis : (v) => axis(v, "/s");
    drawBars(svg, this.points.map((p) => [p.label, main ? p.data[main] : NaN]), format);
    svg.setAttribute("data-points", this.points.length);
  }

  renderMesh() {
    const figureKey = MAIN.find((k) => [...this.cells.values()].some((c) => finite(c[k])));
    const values = [...this.cells.values()].map((c) => c[figureKey]).filter(finite);
    const top = Math.max(...values, 0) || 1;
    const format = figureKey === "throughput_bps" ? bps : figureKey === "rtt_p50_us" ? us : int;
    const table = $("#mesh-matrix");
    table.tHead.replaceChildren(el("tr", {}, el("th", {}, "from ↓ to →"), ...this.hosts.map((h) => el("th", {}, h))));
    table.tBodies[0].replaceChildren(...this.hosts.map((from) => el("tr", {}, el("th", {}, from), ...this.hosts.map((to) => {
      if (from === to) return el("td", { class: "self" }, "—");
      const c = this.cells.get(from + "\n" + to);
      if (!c) return el("td", { class: "pending", "data-from": from, "data-to": to }, "…");
      if (c.error) return el("td", { class: "error", title: c.error, "data-from": from, "data-to": to }, "error");
      const v = c[figureKey];
      const shade = finite(v) ? "background: rgba(36, 87, 197, " + (0.08 + 0.4 * (v / top)).toFixed(2) + ")" : null;
      const loss = finite(c.loss_pct) ? ", " + c.loss_pct.toFixed(2) + " % lost" : "";
      return el("td", { class: "num", style: shade, "data-from": from, "data-to": to }, finite(v) ? format(v) + loss : "–");
    }))));
    const col = COLUMNS.find(([k]) => k === figureKey);
    $("#mesh-caption").textContent = (col ? col[1] : "figure") + " of each pair, the row's host as the client";
  }

  /** The end: a document of the whole series (offered as a download) and its stored runs. */
  finish(result) {
    if (!this.info && !this.points.length) return;
    const box = $("#series-doc");
    box.replaceChildren();
    if (result.document) {
      const button = el("button", { type: "button", class: "secondary" }, "Download the JSON document");
      button.addEventListener("click", () => download(
        new Blob([JSON.stringify(result.document, null, 1)], { type: "application/json" }), "linerate-" + result.id + ".json"));
      box.append(button);
    }
  }
}
