// Charts drawn in SVG by hand (no library, so the page works offline): a line chart of series
// over time (or over any x, with its own ticks), and a bar chart of one figure per labelled
// point. Both draw into an <svg> whose viewBox is W×H (a bar chart taller by its labels' extra
// lines) and replace what it held.

import { el, axis } from "./util.js";

export const COLORS = ["#2457c5", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285"];
const W = 640, H = 220, L = 72, R = 22, T = 10, B = 40;
/** The plot's frame in the viewBox: width, height and the margins left, right, top, bottom. */
export const FRAME = { W, H, L, R, T, B };

/** The x axis of seconds: six ticks from `x0` to `x1`, as [value, label]. */
export function secondsTicks(x0, x1) {
  return [0, 1, 2, 3, 4, 5].map((i) => {
    const v = x0 + ((x1 - x0) * i) / 5;
    return [v, v.toFixed(1) + " s"];
  });
}

/** An axis of microseconds, in ms when its top is 1 ms or more. */
export const usAxis = (v, top) => (top >= 1000 ? axis(v / 1000, "ms") : axis(v, "µs"));

/** A round number at or above `v`, for the top of an axis. */
export function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function yGrid(svg, top, format) {
  const sy = (y) => H - B - (y / top) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4, y = sy(v);
    svg.append(el("svg:line", { x1: L, x2: W - R, y1: y, y2: y, class: i ? "grid" : "axis" }));
    svg.append(el("svg:text", { x: L - 6, y: y + 4, "text-anchor": "end" }, format(v, top)));
  }
  return sy;
}

function message(svg, text) {
  svg.append(el("svg:text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, text));
}

/**
 * A line chart of `series` ([{label, points: [[x seconds, y], …]}]); y values that are not
 * finite are gaps. `format(v, top)` labels the y axis (`top`: its highest value). The x axis
 * starts at `from` (the first interval's start) or at the first point; `ticks(x0, x1)` gives
 * its labels. Returns the scales `{sx, sy}` (x and y to the viewBox), for marks drawn over
 * it, or null when there was nothing to draw.
 */
export function drawLines(svg, series, format, from = Infinity, empty = "waiting for the first interval…", ticks = secondsTicks) {
  svg.replaceChildren();
  let x0 = from, x1 = -Infinity, y1 = 0, any = false;
  for (const s of series) for (const [x, y] of s.points) {
    if (!isFinite(y)) continue;
    any = true;
    x0 = Math.min(x0, x); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
  }
  if (!any) { message(svg, empty); return null; }
  if (x1 - x0 < 1e-9) x1 = x0 + 1;
  const top = niceMax(y1);
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = yGrid(svg, top, format);
  for (const [v, label] of ticks(x0, x1)) {
    svg.append(el("svg:text", { x: sx(v), y: H - B + 16, "text-anchor": "middle" }, label));
  }
  series.forEach((s, i) => {
    const color = s.color || COLORS[i % COLORS.length];
    // One polyline per unbroken run of finite values.
    let run = [];
    const flush = () => {
      // Every other series dashed, so two that coincide both show.
      if (run.length > 1) svg.append(el("svg:polyline", { points: run.join(" "), class: "series", stroke: color, "stroke-dasharray": i % 2 ? "7 4" : null }));
      if (run.length === 1) {
        const [cx, cy] = run[0].split(",");
        svg.append(el("svg:circle", { cx, cy, r: 3, fill: color }));
      }
      run = [];
    };
    for (const [x, y] of s.points) {
      if (isFinite(y)) run.push(sx(x).toFixed(1) + "," + sy(y).toFixed(1));
      else flush();
    }
    flush();
    const lx = L + 10 + i * 130;
    svg.append(el("svg:line", { x1: lx, x2: lx + 18, y1: H - 13, y2: H - 13, stroke: color, "stroke-width": 2.5, "stroke-dasharray": i % 2 ? "5 3" : null }));
    svg.append(el("svg:text", { x: lx + 22, y: H - 9 }, s.label));
  });
  return { sx, sy };
}

/** A bar chart: one bar per `[label, value]`, in order; `format` labels the values. Labels are
 * written whole, wrapped at spaces under their bar (the chart grows to hold their lines); where
 * a word would not fit under its bar, every second (third, …) bar is labelled instead. */
export function drawBars(svg, bars, format) {
  svg.replaceChildren();
  const values = bars.map(([, v]) => v).filter((v) => isFinite(v));
  if (values.length === 0) { message(svg, "waiting for the first point…"); return; }
  // Headroom above the highest bar for its value's label.
  const top = niceMax(Math.max(...values, 0) * 1.1);
  const sy = yGrid(svg, top, format);
  const slot = (W - L - R) / bars.length;
  const { every, lines } = barLabels(bars.map(([label]) => String(label)), slot);
  const rows = Math.max(1, ...lines.filter(Boolean).map((l) => l.length));
  svg.setAttribute("viewBox", `0 0 ${W} ${H + (rows - 1) * LINE}`);
  bars.forEach(([, v], i) => {
    const x = L + i * slot;
    if (isFinite(v)) {
      const y = sy(Math.max(v, 0));
      svg.append(el("svg:rect", {
        x: (x + slot * 0.15).toFixed(1), y: y.toFixed(1), width: (slot * 0.7).toFixed(1),
        height: Math.max(H - B - y, 0).toFixed(1), class: "bar",
      }));
      if (bars.length <= 12) {
        svg.append(el("svg:text", { x: x + slot / 2, y: y - 4, "text-anchor": "middle", class: "value" }, format(v, top)));
      }
    }
    if (i % every === 0) {
      const text = el("svg:text", { x: x + slot / 2, y: H - B + 16, "text-anchor": "middle", class: "bar-label" });
      lines[i].forEach((line, n) => text.append(el("svg:tspan", { x: x + slot / 2, dy: n ? LINE : 0 }, line)));
      svg.append(text);
    }
  });
}

/** The height of a label's line, and the width of one of its characters (11 px text), in the
 * viewBox's units. */
const LINE = 12, CHAR = 6.5;

/** Which bars are labelled (every `every`-th, at most 16) and each one's lines: words joined
 * while they fit the width of `every` slots (less, near the chart's edges: a label is centred
 * on its bar and stays inside the chart), at most three lines. */
function barLabels(labels, slot) {
  for (let every = Math.ceil(labels.length / 16); ; every++) {
    const fits = (i) => {
      const x = L + (i + 0.5) * slot;
      return Math.floor(Math.min(slot * every * 0.95, 2 * (W - 2 - x), 2 * (x - 2)) / CHAR);
    };
    const lines = labels.map((label, i) => (i % every === 0 ? wrap(label, fits(i)) : null));
    const ok = lines.every((l, i) => !l || (l.length <= 3 && l.every((line) => line.length <= fits(i))));
    if (ok || every >= labels.length) return { every, lines };
  }
}

/** `text`'s words in lines of at most `fit` characters (a longer word on a line of its own). */
function wrap(text, fit) {
  const lines = [];
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last].length + 1 + word.length <= fit) lines[last] += " " + word;
    else lines.push(word);
  }
  return lines.length ? lines : [""];
}
