// The charts and the interval table of one test, live or stored. Which charts a test has
// depends on its family (bulk TCP, UDP, request/response); a chart whose figures the
// intervals do not carry (CPU from an older server, jitter, the latency probe) stays hidden.
// Live, only the last WINDOW intervals are kept: the charts and the table never grow past it.

import { api, el, flowLabel, axis, bps, bytes, num, int, us, WINDOW } from "./util.js";
import { drawLines, usAxis } from "./chart.js";

const val = (v) => (typeof v === "number" ? v : NaN);

// Each stored kind's charts, from its family of figures (GET /api/record-kinds, the kind
// table's); a kind not known (yet) is told by its samples (familyOfSample).
const CHARTS_OF = { stream: "stream", datagram: "udp", transaction: "rr" };
const FAMILY = {};
/** Settles, with the stored kinds, once they are known (or could not be: none). */
export const recordKindsLoaded = api("/api/record-kinds").then((kinds) => {
  for (const k of kinds) FAMILY[k.kind] = CHARTS_OF[k.family];
  return kinds;
}).catch(() => []);

/** `stream`, `udp` or `rr`, from a record's kind; null when the kind is not known. */
export function familyOfKind(kind) {
  return FAMILY[kind] || null;
}

/** The family an interval sample belongs to, from what its flows carry. */
export function familyOfSample(s) {
  const flows = s.flows || [];
  if (flows.some((f) => f.rr)) return "rr";
  if (flows.some((f) => f.udp)) return "udp";
  return "stream";
}

// One series per direction of `pick(flow)`.
function perFlow(samples, pick) {
  const flows = new Map();
  for (const s of samples) for (const f of s.flows || []) {
    let pts = flows.get(f.flow);
    if (!pts) flows.set(f.flow, (pts = []));
    pts.push([s.end_s, val(pick(f))]);
  }
  return [...flows].map(([flow, points]) => ({ label: flowLabel(flow), points }));
}

// One series per `[label, pick(sample)]`.
function perSample(samples, picks) {
  return picks.map(([label, pick]) => ({ label, points: samples.map((s) => [s.end_s, val(pick(s))]) }));
}

const cpu = (s) => s.cpu || {};
const rr0 = (s) => (s.flows && s.flows[0] && s.flows[0].rr) || {};
const probe = (s) => s.probe || {};

// Every chart: its id (the <svg> is #chart-ID), title, families, series and y-axis format.
// `always` charts show even before their first figure.
const CHARTS = [
  { id: "throughput", title: "Throughput (receiver goodput) per direction", families: ["stream", "udp"], always: true,
    series: (ss) => perFlow(ss, (f) => f.throughput_bps), format: (v) => axis(v, "bit/s") },
  { id: "throughput", title: "Transactions per second", families: ["rr"], always: true,
    series: (ss) => perFlow(ss, (f) => f.rr && f.rr.transactions_per_s), format: (v) => axis(v, "/s") },
  { id: "latency", title: "Round trip", families: ["rr"],
    series: (ss) => perSample(ss, [["p50", (s) => rr0(s).p50_us], ["p99", (s) => rr0(s).p99_us], ["p99.9", (s) => rr0(s).p999_us]]),
    format: usAxis },
  { id: "cpu", title: "CPU (% of one core: data threads)", families: ["stream", "udp", "rr"],
    series: (ss) => perSample(ss, [["client", (s) => cpu(s).local_pct], ["server", (s) => cpu(s).remote_pct]]),
    format: (v) => axis(v, "%") },
  { id: "host", title: "Host busy (% of all cores)", families: ["stream", "udp", "rr"],
    series: (ss) => perSample(ss, [["client host", (s) => cpu(s).local_host_busy_pct], ["server host", (s) => cpu(s).remote_host_busy_pct]]),
    format: (v) => axis(v, "%") },
  { id: "retransmits", title: "TCP retransmits per interval", families: ["stream"],
    series: (ss) => perFlow(ss, (f) => f.tcp_info && f.tcp_info.retransmits), format: (v) => axis(v, "") },
  { id: "cwnd", title: "Congestion window (segments, all streams)", families: ["stream"],
    series: (ss) => perFlow(ss, (f) => f.tcp_info && f.tcp_info.snd_cwnd_segments), format: (v) => axis(v, "") },
  { id: "rtt", title: "Sender's smoothed RTT", families: ["stream"],
    series: (ss) => perFlow(ss, (f) => f.tcp_info && f.tcp_info.rtt_us), format: usAxis },
  { id: "loss", title: "Datagrams lost per interval", families: ["udp"],
    series: (ss) => perFlow(ss, (f) => f.udp && f.udp.packets_lost), format: (v) => axis(v, "") },
  { id: "jitter", title: "Jitter", families: ["udp"],
    series: (ss) => perFlow(ss, (f) => f.udp && f.udp.jitter_us), format: usAxis },
  { id: "probe", title: "Latency under load: the probe's round trip", families: ["stream", "udp", "rr"],
    series: (ss) => perSample(ss, [["p50", (s) => probe(s).p50_us], ["p99", (s) => probe(s).p99_us]]),
    format: usAxis },
];

const hasPoints = (s) => s.points.some((p) => isFinite(p[1]));
const hasData = (series) => series.some(hasPoints);

/** The charts of one test in `box` (a `.charts` element). */
export class ChartSet {
  constructor(box) {
    this.box = box;
    this.family = null;
    this.figures = [];
  }

  build(family) {
    this.family = family;
    this.figures = CHARTS.filter((c) => c.families.includes(family)).map((def) => {
      const svg = el("svg:svg", { id: "chart-" + def.id, viewBox: "0 0 640 220", role: "img", "data-points": 0, "data-window": WINDOW });
      const fig = el("figure", { hidden: !def.always }, el("figcaption", {}, def.title), svg);
      return { def, fig, svg };
    });
    this.box.replaceChildren(...this.figures.map((f) => f.fig));
  }

  /** Draws `samples` (all of family `family`). */
  draw(family, samples) {
    if (family !== this.family) this.build(family);
    for (const { def, fig, svg } of this.figures) {
      const series = def.series(samples);
      const show = def.always || hasData(series);
      fig.hidden = !show;
      // A series with no figure at all (no p99.9, no server CPU) is left out of the legend too.
      const from = samples.length ? samples[0].start_s : Infinity;
      if (show) drawLines(svg, hasData(series) ? series.filter(hasPoints) : series, def.format, from);
      svg.setAttribute("data-points", samples.length);
    }
  }
}

// ---- the interval table ----

const HEADS = {
  stream: ["interval", "dir", "sent", "received", "rate", "retr", "cwnd", "rtt", "CPU c/s"],
  udp: ["interval", "dir", "rate", "sent/s", "recv/s", "lost", "ooo", "CPU c/s"],
  rr: ["interval", "dir", "trans/s", "p50", "p99", "CPU c/s"],
};

function cpuCell(s) {
  const c = s.cpu;
  if (!c || (typeof c.local_pct !== "number" && typeof c.remote_pct !== "number")) return "–";
  return num(c.local_pct, 0) + " / " + num(c.remote_pct, 0) + " %";
}

/** The table's rows of one sample, one per direction. */
export function tableRows(family, s) {
  const span = num(s.start_s, 2) + " – " + num(s.end_s, 2);
  return (s.flows || []).map((f) => {
    const head = [span, flowLabel(f.flow)];
    if (family === "rr") {
      const r = f.rr || {};
      return [...head, int(r.transactions_per_s), us(r.p50_us), us(r.p99_us), cpuCell(s)];
    }
    if (family === "udp") {
      const u = f.udp || {};
      return [...head, bps(f.throughput_bps), int(u.pps_sent), int(u.pps_received), u.packets_lost ?? "–", u.packets_out_of_order ?? "–", cpuCell(s)];
    }
    const t = f.tcp_info || {};
    return [...head, bytes(f.sender_bytes), bytes(f.receiver_bytes), bps(f.throughput_bps), t.retransmits ?? "–", t.snd_cwnd_segments ?? "–", us(t.rtt_us), cpuCell(s)];
  });
}

function rowOf(cells) {
  return el("tr", {}, ...cells.map((v, i) => el("td", { class: i > 1 ? "num" : null }, v)));
}

/**
 * A live test's window: its last WINDOW samples in the charts, their rows (newest first, at most
 * WINDOW) in the table. Redraws at most ten times a second, however fast intervals come.
 */
export class LiveView {
  constructor(chartBox, table) {
    this.charts = new ChartSet(chartBox);
    this.table = table;
    this.reset(null);
  }

  /**
   * Starts again, for a test of `kind` (a record kind), or hidden until its first interval when
   * the kind is not known (a series' runs may send none).
   */
  reset(kind) {
    this.family = familyOfKind(kind);
    this.show(this.family !== null);
    this.samples = [];
    this.table.tHead.replaceChildren();
    this.table.tBodies[0].replaceChildren();
    this.charts.family = null;
    if (this.family) this.setFamily(this.family);
    this.drawSoon();
  }

  show(on) {
    this.charts.box.hidden = !on;
    this.table.closest("details").hidden = !on;
  }

  setFamily(family) {
    this.family = family;
    this.table.tHead.replaceChildren(el("tr", {}, ...HEADS[family].map((h, i) => el("th", { class: i > 1 ? "num" : null }, h))));
    this.table.tBodies[0].replaceChildren();
  }

  /** One interval sample. A sample that starts before the last one ended opens a new run. */
  add(sample) {
    const last = this.samples[this.samples.length - 1];
    const family = familyOfSample(sample);
    if ((last && sample.start_s < last.end_s - 1e-6) || family !== this.family) {
      this.samples = [];
      this.setFamily(family);
    }
    this.samples.push(sample);
    this.show(true);
    if (this.samples.length > WINDOW) this.samples.splice(0, this.samples.length - WINDOW);
    const body = this.table.tBodies[0];
    const rows = tableRows(this.family, sample).map(rowOf);
    body.prepend(...rows);
    while (body.rows.length > WINDOW) body.deleteRow(-1);
    this.drawSoon();
  }

  drawSoon() {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.charts.draw(this.family || "stream", this.samples);
    }, 100);
  }
}
