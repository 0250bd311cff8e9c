// `linerate rpm` in the run view: each direction's intervals (`tick` events) as two charts,
// goodput and the round trips (self, foreign and kernel medians), then the result's RPM per
// direction (docs/RESULTS.md, `linerate rpm --json`).

import { $, el, bps, axis, num, int, finite } from "./util.js";
import { drawLines, usAxis } from "./chart.js";

const KINDS = [["self", "self_p50_ms"], ["foreign", "foreign_p50_ms"], ["kernel", "kernel_rtt_ms"]];

export class RpmView {
  constructor() {
    this.ticks = [];
  }

  reset() {
    this.ticks = [];
    $("#rpm").hidden = true;
    $("#rpm-summary").replaceChildren();
  }

  /** One interval of a direction: `{direction, data: RpmTick}`. */
  tick(t) {
    this.ticks.push(t);
    $("#rpm").hidden = false;
    this.draw();
  }

  draw() {
    // Each direction's intervals, in the order the directions ran.
    const ways = new Map();
    for (const t of this.ticks) (ways.get(t.direction) || ways.set(t.direction, []).get(t.direction)).push(t.data);
    const goodput = [...ways].map(([way, data]) => ({ label: way, points: data.map((d) => [d.t_s, d.goodput_bps]) }));
    const rtts = [...ways].flatMap(([way, data]) => KINDS.map(([label, key]) => ({
      label: way + " " + label,
      // The ticks' round trips are in ms; the axis takes µs.
      points: data.map((d) => [d.t_s, finite(d[key]) ? d[key] * 1000 : NaN]),
    })));
    for (const [id, series, format] of [["rpm-goodput", goodput, (v) => axis(v, "bit/s")], ["rpm-rtt", rtts, usAxis]]) {
      const svg = $("#chart-" + id);
      drawLines(svg, series, format, 0);
      svg.setAttribute("data-points", this.ticks.length);
    }
  }

  /** The end: RPM and its parts per direction, and the idle path's. */
  finish(doc) {
    const box = $("#rpm-summary");
    box.replaceChildren();
    const grid = el("div", { class: "figures" });
    const figure = (value, name) => grid.append(el("div", { class: "figure" }, el("b", {}, value), el("span", {}, name)));
    for (const d of doc.directions || []) {
      const r = d.responsiveness;
      figure(r ? int(r.rpm) : "–", d.direction + " RPM (" + d.rpm_confidence + " confidence)");
      figure(bps(d.goodput_bps), d.direction + " goodput, " + d.connections + " connections");
      figure(num(d.self_ms && d.self_ms.p50, 2) + " ms", d.direction + " self probe p50");
      figure(num(d.in_network_queues_ms, 2) + " ms", d.direction + " in the network's queues");
    }
    if (doc.idle && finite(doc.idle.rpm)) figure(int(doc.idle.rpm), "idle RPM");
    box.append(grid, el("p", { class: "state" }, doc.draft || ""));
  }
}
