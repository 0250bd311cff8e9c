// The trend view (GET /api/trend, `linerate trend --format json`): per series a line chart of
// its metric over its runs, each change point a dashed line with its label ("−10.0 % at #13",
// red when for the worse), and a table of the change points. What it shows is in the URL's
// hash (#trend/runs=series%3Ds&metric=throughput), the API's own query, so it can be linked.

import { $, el, api, figure } from "./util.js";
import { drawLines, FRAME } from "./chart.js";

/** The trend form's fields as the API's query: each `;`-separated series a `runs=`. */
export function trendQuery(form) {
  const query = new URLSearchParams();
  const data = new FormData(form);
  for (const series of String(data.get("runs") || "").split(";")) {
    if (series.trim()) query.append("runs", series.trim());
  }
  for (const name of ["metric", "by", "kind"]) {
    const v = String(data.get(name) || "").trim();
    if (v) query.set(name, v);
  }
  return query.toString();
}

function fillForm(form, query) {
  form.elements.namedItem("runs").value = query.getAll("runs").join("; ");
  // A kind the filter does not offer yet (its kinds still on their way) is offered now.
  const kind = form.elements.namedItem("kind"), wanted = query.get("kind");
  if (wanted && ![...kind.options].some((o) => o.value === wanted)) kind.append(el("option", {}, wanted));
  for (const name of ["metric", "by", "kind"]) form.elements.namedItem(name).value = query.get(name) || "";
}

// A y axis of any unit: the figure alone (the unit is in the caption).
const yLabel = (v) => (Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en") : String(+v.toPrecision(3)));

/** The x axis of a series' runs: at most 8 of them named, the first and the last among them. */
function runTicks(points) {
  return () => {
    const n = points.length, step = Math.max(1, Math.ceil(n / 8));
    const at = [];
    for (let i = 0; i < n; i += step) at.push(i);
    if (at[at.length - 1] !== n - 1 && n - 1 - at[at.length - 1] >= step / 2) at.push(n - 1);
    return at.map((i) => [i, "#" + points[i].run]);
  };
}

/** "−10.0 % at #13": the change's size (a true minus sign) and its first run. */
export function changeLabel(c) {
  const pct = typeof c.change_pct === "number" && isFinite(c.change_pct)
    ? (c.change_pct < 0 ? "−" : "+") + Math.abs(c.change_pct).toFixed(1) + " %"
    : "change";
  return pct + " at #" + c.run;
}

/** Draws one series into `svg`: its line, a dot per run (hover: run and value), its changes. */
function drawSeries(svg, s) {
  const points = s.points || [];
  const line = [{ label: s.metric + (s.unit ? " (" + s.unit + ")" : ""), points: points.map((p, i) => [i, p.value]) }];
  const scales = drawLines(svg, line, yLabel, Infinity, "no run has this metric", runTicks(points));
  svg.setAttribute("data-points", points.length);
  if (!scales) return;
  const { sx, sy } = scales;
  const { W, H, T, B } = FRAME;
  if (points.length <= 200) {
    points.forEach((p, i) => svg.append(el("svg:circle", { cx: sx(i).toFixed(1), cy: sy(p.value).toFixed(1), r: 2.5, class: "point" },
      el("svg:title", {}, "#" + p.run + ": " + figure(p.value) + " " + (s.unit || "")))));
  }
  (s.change_points || []).forEach((c, k) => {
    // Between the last run of the old level and the first of the new.
    const x = sx(c.index - 0.5), cls = c.worse ? " worse" : " better";
    svg.append(el("svg:line", { x1: x.toFixed(1), x2: x.toFixed(1), y1: T, y2: H - B, class: "change" + cls, "data-run": c.run }));
    const right = x > W / 2;
    svg.append(el("svg:text", { x: (right ? x - 4 : x + 4).toFixed(1), y: T + 12 + 13 * k, "text-anchor": right ? "end" : "start",
      class: "change-label" + cls }, changeLabel(c)));
  });
}

function changesTable(series) {
  const rows = [];
  for (const s of series) {
    for (const c of s.change_points || []) {
      rows.push(el("tr", { "data-run": c.run }, el("td", {}, s.key), el("td", {}, "#" + c.run),
        el("td", { class: "num" }, String(c.index + 1) + " of " + (s.points || []).length),
        el("td", { class: "num" }, figure(c.before) + " → " + figure(c.after) + " " + (s.unit || "")),
        el("td", { class: "num" }, el("span", { class: "ratio " + (c.worse ? "worse" : "better") }, changeLabel(c).split(" at ")[0])),
        el("td", { class: "num" }, figure(c.confidence * 100) + " %")));
    }
  }
  return rows;
}

// Which request is the latest: an older answer arriving late is dropped.
let asked = 0;

/** The trend view of `arg` (the API's query, as in the hash). */
export async function showTrend(arg) {
  const query = new URLSearchParams(arg || "");
  fillForm($("#trend-form"), query);
  const runs = query.getAll("runs");
  $("#trend-title").textContent = "Trend of " + (runs.length ? runs.join("; ") : "every run, per target")
    + (query.get("by") ? ", in the order of " + query.get("by") : ", in time order");
  const state = $("#trend-state");
  state.textContent = "loading…";
  state.className = "state";
  $("#trend-charts").replaceChildren();
  $("#trend-changes").hidden = true;
  $("#trend-changes tbody").replaceChildren();
  const mine = ++asked;
  try {
    const doc = await api("/api/trend?" + query);
    if (mine !== asked) return;
    const series = doc.series || [];
    const changes = series.reduce((n, s) => n + (s.change_points || []).length, 0);
    state.textContent = series.length + " series, " + changes + " change point(s) (E-divisive means, p ≤ " + doc.alpha + ")";
    for (const s of series) {
      const svg = el("svg:svg", { viewBox: "0 0 640 220", role: "img", class: "trend-chart" });
      $("#trend-charts").append(el("figure", {}, el("figcaption", {}, s.key + ": " + s.metric + (s.unit ? ", " + s.unit : "")), svg));
      drawSeries(svg, s);
    }
    const rows = changesTable(series);
    $("#trend-changes tbody").replaceChildren(...rows);
    $("#trend-changes").hidden = rows.length === 0;
  } catch (e) {
    if (mine !== asked) return;
    state.textContent = e.message;
    state.className = "state error";
  }
}
