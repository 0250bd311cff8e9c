// The stored runs (GET /api/runs): a filtered list whose rows can be ticked, one run in detail
// (GET /api/runs/ID: its charts and summary; GET /api/runs/ID/text: every line of its summary),
// the ticked runs compared (GET /api/compare) or downloaded as an HTML report (GET /api/report),
// and the trend (trend.js) of the tag typed in or of the tags the ticked runs share.

import { $, el, api, apiText, bps, num, us, when, download, figure } from "./util.js";
import { ChartSet, familyOfKind, familyOfSample, recordKindsLoaded } from "./live.js";
import { showSummary } from "./summary.js";
import { showView } from "./views.js";

// The ticked runs' ids, in the order they were ticked (the first is the comparison's baseline).
const ticked = [];
// The tags of each run listed (id → {key: value}), for the trend of the ticked runs.
const listed = new Map();

function tickedChanged() {
  const n = ticked.length;
  $("#ticked").textContent = n ? ticked.map((id) => "#" + id).join(", ") + " ticked" : "tick runs to compare them";
  $("#compare-runs").disabled = n < 2;
  $("#report-runs").disabled = n < 1;
}

function tick(id, on) {
  const at = ticked.indexOf(id);
  if (on && at < 0) ticked.push(id);
  if (!on && at >= 0) ticked.splice(at, 1);
  tickedChanged();
}

function rowOf(r) {
  const tags = Object.entries(r.tags || {}).map(([k, v]) => k + "=" + v).join(", ");
  const box = el("input", { type: "checkbox", "aria-label": "tick run " + r.id, "data-run": r.id, checked: ticked.includes(r.id) });
  box.addEventListener("click", (e) => e.stopPropagation());
  box.addEventListener("change", () => tick(r.id, box.checked));
  const row = el("tr", { "data-run": r.id }, el("td", {}, box), el("td", {}, "#" + r.id), el("td", {}, when(r.started_at_unix_ms)),
    el("td", {}, r.kind), el("td", {}, r.target), el("td", { class: "tags" }, tags), el("td", { class: "num" }, bps(r.throughput_bps)),
    el("td", { class: "num" }, num(r.transactions_per_s, 0)), el("td", { class: "num" }, us(r.p99_us)),
    el("td", { class: "num" }, r.loss_pct === null ? "–" : num(r.loss_pct, 3) + " %"));
  row.addEventListener("click", () => showRun(r.id, row));
  return row;
}

/** Lists the stored runs the filter asks for, newest first. */
export async function loadRuns(event) {
  if (event) event.preventDefault();
  const query = new URLSearchParams();
  for (const [k, v] of new FormData($("#runs-filter"))) if (String(v).trim()) query.append(k, String(v).trim());
  const state = $("#runs-state");
  try {
    const runs = await api("/api/runs?" + query);
    state.textContent = runs.length + " run(s)";
    state.className = "state";
    for (const r of runs) listed.set(r.id, r.tags || {});
    $("#runs tbody").replaceChildren(...runs.slice().reverse().map(rowOf));
    tickedChanged();
  } catch (e) {
    state.textContent = e.message;
    state.className = "state error";
  }
}

let detailCharts = null;

/** Shows stored run `id` under the list. */
export async function showRun(id, row) {
  for (const r of document.querySelectorAll("#runs tr.selected")) r.classList.remove("selected");
  if (row) row.classList.add("selected");
  history.replaceState(null, "", "#runs/" + id);
  try {
    const run = await api("/api/runs/" + id);
    const rec = run.record;
    $("#run-detail").hidden = false;
    $("#detail-title").textContent = "run #" + run.id + ": " + rec.kind + " to " + rec.target + ", " + when(rec.started_at_unix_ms);
    detailCharts = detailCharts || new ChartSet($("#detail-charts"));
    await recordKindsLoaded;
    const intervals = rec.intervals || [];
    const family = familyOfKind(rec.kind) || (intervals.length ? familyOfSample(intervals[0]) : "stream");
    detailCharts.draw(family, intervals);
    showSummary($("#detail-summary"), rec.summary);
    $("#detail-text").textContent = "";
    const text = await apiText("/api/runs/" + id + "/text");
    // Another run may have been chosen meanwhile: its text is on its way.
    if (location.hash === "#runs/" + id) $("#detail-text").textContent = text;
  } catch (e) {
    $("#runs-state").textContent = e.message;
    $("#runs-state").className = "state error";
  }
}

// ---- compare ----

function ratioCell(value, ratio, better) {
  if (typeof ratio !== "number" || !isFinite(ratio)) return el("td", { class: "num" }, figure(value));
  const up = ratio > 1.02, down = ratio < 0.98;
  const good = (better === "higher" && up) || (better === "lower" && down);
  const bad = (better === "higher" && down) || (better === "lower" && up);
  return el("td", { class: "num" }, figure(value) + " ",
    el("span", { class: "ratio" + (good ? " better" : bad ? " worse" : "") }, "×" + ratio.toFixed(2)));
}

function compareTable(doc) {
  const cols = doc.columns || [];
  const head = el("tr", {}, el("th", {}, "metric"), el("th", {}, "unit"), ...cols.map((c, i) => el("th", { class: "num" },
    c.label + (i === 0 ? " (baseline)" : ""), c.runs > 1 ? el("small", {}, " median of " + c.runs) : null,
    (c.marks || []).length ? el("small", {}, " [" + c.marks.join(", ") + "]") : null)));
  const rows = (doc.rows || []).map((r) => el("tr", {}, el("td", {}, r.metric), el("td", {}, r.unit || ""),
    ...(r.values || []).map((v, i) => (i === 0 ? el("td", { class: "num" }, figure(v)) : ratioCell(v, (r.ratios || [])[i], r.better)))));
  return el("table", { id: "compare-table" }, el("thead", {}, head), el("tbody", {}, ...rows));
}

/** The compare view of runs `ids` (the first the baseline). */
export async function showCompare(ids) {
  const box = $("#compare-body");
  $("#compare-title").textContent = "Compare " + ids.map((id) => "#" + id).join(", ");
  $("#compare-state").textContent = "loading…";
  $("#compare-state").className = "state";
  box.replaceChildren();
  try {
    const doc = await api("/api/compare?runs=" + ids.join(","));
    $("#compare-state").textContent = "";
    if (!doc.rows && typeof doc.text === "string") {
      box.append(el("pre", { class: "compare-text" }, doc.text));
      return;
    }
    // Runs of several kinds come as one comparison per kind: never a ratio across kinds.
    const docs = Array.isArray(doc) ? doc : [doc];
    for (const d of docs) {
      if (docs.length > 1) box.append(el("p", { class: "title" }, d.kind || ""));
      box.append(compareTable(d));
      const diffs = d.differences || [];
      if (diffs.length) {
        box.append(el("p", { class: "title" }, "What differs between them"),
          el("ul", { class: "differences" }, ...diffs.map((x) => el("li", {}, el("code", {}, x.what), ": " + (x.values || []).join(" | ")))));
      }
    }
  } catch (e) {
    $("#compare-state").textContent = e.message;
    $("#compare-state").className = "state error";
  }
}

/** Downloads the HTML report of runs `ids`. */
export async function downloadReport(ids, state) {
  state.textContent = "making the report…";
  state.className = "state";
  try {
    const res = await fetch("/api/report?runs=" + ids.join(","), { credentials: "same-origin" });
    if (!res.ok) {
      const text = await res.text();
      let message = res.status + " " + res.statusText;
      try { message = JSON.parse(text).error || message; } catch (e) { /* not JSON */ }
      throw new Error(message);
    }
    const named = /filename="?([^";]+)"?/.exec(res.headers.get("Content-Disposition") || "");
    download(await res.blob(), named ? named[1] : "linerate-report-" + ids.join("-") + ".html");
    state.textContent = "report downloaded";
  } catch (e) {
    state.textContent = e.message;
    state.className = "state error";
  }
}

/**
 * Opens the trend of the tag set typed in the filter, else of the tags every ticked run carries
 * (one series), else of every run per target; of the filter's kind, if one is chosen.
 */
function showTrendOfList() {
  const filter = new FormData($("#runs-filter"));
  const typed = String(filter.get("tag") || "").trim(), kind = String(filter.get("kind") || "");
  const query = new URLSearchParams();
  if (typed) {
    query.append("runs", typed);
  } else if (ticked.length) {
    const sets = ticked.map((id) => listed.get(id) || {});
    const shared = Object.entries(sets[0]).filter(([k, v]) => sets.every((t) => t[k] === v));
    if (!shared.length) {
      $("#runs-state").textContent = "the ticked runs share no tag: type a tag set (KEY=VALUE) in Tag for its trend";
      $("#runs-state").className = "state error";
      return;
    }
    query.append("runs", shared.map(([k, v]) => k + "=" + v).join(","));
  }
  if (kind) query.set("kind", kind);
  showView("trend", query.toString());
}

/** Wires the runs view's controls. */
export function setUpRuns() {
  $("#runs-filter").addEventListener("submit", loadRuns);
  $("#compare-runs").addEventListener("click", () => showView("compare", ticked.join(",")));
  $("#trend-runs").addEventListener("click", showTrendOfList);
  $("#report-runs").addEventListener("click", () => downloadReport(ticked.slice(), $("#runs-state")));
  $("#compare-report").addEventListener("click", () => {
    const ids = location.hash.split("/")[1] || "";
    downloadReport(ids.split(",").filter(Boolean), $("#compare-state"));
  });
  $("#compare-back").addEventListener("click", () => showView("runs"));
  document.addEventListener("linerate:stored", () => loadRuns());
  tickedChanged();
}

/** The ids of a hash's `12,13`. */
export const idsOf = (arg) => String(arg || "").split(",").map((s) => s.trim().replace(/^#/, "")).filter((s) => /^\d+$/.test(s));
