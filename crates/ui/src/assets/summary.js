// A finished run's summary (docs/RESULTS.md, `summary`) as a grid of figures, then what
// limited each direction.

import { el, bps, num, int, us, pct, flowLabel, finite } from "./util.js";

function figuresOf(summary) {
  const figures = [["throughput", bps(summary.throughput_bps)], ["seconds", num(summary.duration_s, 2)],
    ["client CPU (% of a core)", pct(summary.local_cpu_pct)], ["server CPU (% of a core)", pct(summary.remote_cpu_pct)]];
  if (finite(summary.retransmits)) figures.push(["retransmits", int(summary.retransmits)]);
  if (finite(summary.rtt_us)) figures.push(["RTT", us(summary.rtt_us)]);
  // UDP figures sit in the summary itself (older servers' documents: in `udp`).
  const u = summary.udp || summary;
  if (finite(u.loss_pct)) {
    figures.push(["loss", pct(u.loss_pct, 3)], ["jitter", us(u.jitter_us)], ["datagrams/s received", int(u.pps_received)]);
  }
  const r = summary.rr || summary;
  if (finite(r.transactions_per_s)) figures.push(["transactions/s", int(r.transactions_per_s)]);
  const l = r.latency_us;
  if (l) figures.push(["p50", us(l.p50)], ["p99", us(l.p99)], ["p99.9", us(l.p999)]);
  if (finite(r.connections_per_s)) figures.push(["connections/s", int(r.connections_per_s)]);
  const load = summary.latency_under_load;
  if (load && load.loaded && load.loaded.latency_us) figures.push(["loaded p50 (probe)", us(load.loaded.latency_us.p50)]);
  if (summary.interrupted) figures.push(["", "stopped early"]);
  return figures;
}

/** Fills `box` with `summary`'s figures and verdicts. */
export function showSummary(box, summary) {
  box.replaceChildren();
  if (!summary) return;
  const grid = el("div", { class: "figures" });
  for (const [name, value] of figuresOf(summary)) {
    grid.append(el("div", { class: "figure" }, el("b", {}, value), el("span", {}, name)));
  }
  box.append(grid);
  for (const f of summary.flows || []) {
    const v = f.limited_by;
    if (v) {
      box.append(el("div", { class: "verdict" },
        flowLabel(f.flow) + " limited by " + String(v.verdict).replace(/_/g, " ") + ": " + v.evidence + (v.hint ? " — " + v.hint : "")));
    }
  }
}
