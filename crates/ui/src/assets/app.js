// linerate ui: the page. Plain modules, no libraries, nothing fetched from elsewhere (it works
// offline). run.js starts tests (form.js: the form) and follows their events (live.js: charts and interval table;
// series.js: sweeps, searches, matrices and meshes), runs.js browses, compares and reports the
// stored runs, trend.js draws their trends, views.js switches between the views. Charts are SVG
// drawn by chart.js.

import { $, api, el } from "./util.js";
import { startTest, stopTest, follow } from "./run.js";
import { kindChanged, kindsLoaded } from "./form.js";
import { loadRuns, showRun, showCompare, setUpRuns, idsOf } from "./runs.js";
import { showView, onShow, route } from "./views.js";
import { showTrend, trendQuery } from "./trend.js";
import { recordKindsLoaded } from "./live.js";

onShow("runs", (id) => {
  loadRuns();
  if (id) showRun(id, null);
  else $("#run-detail").hidden = true;
});
onShow("compare", (arg) => showCompare(idsOf(arg)));
onShow("trend", (arg) => showTrend(arg));
$("#trend-form").addEventListener("submit", (e) => {
  e.preventDefault();
  showView("trend", trendQuery(e.target));
});
$("#trend-back").addEventListener("click", () => showView("runs"));

document.querySelectorAll(".tab").forEach((tab) => tab.addEventListener("click", () => showView(tab.dataset.view)));
$("#run-form").addEventListener("submit", startTest);
$("#run-form [name=kind]").addEventListener("change", kindChanged);
$("#stop").addEventListener("click", stopTest);
setUpRuns();
kindChanged();
kindsLoaded.then(kindChanged);
// The stored kinds the runs and trend filters offer (GET /api/record-kinds).
recordKindsLoaded.then((kinds) => {
  for (const select of document.querySelectorAll("select.record-kinds")) {
    const offered = new Set([...select.options].map((o) => o.value));
    select.append(...kinds.filter((k) => !offered.has(k.kind)).map((k) => el("option", {}, k.kind)));
  }
});

// #runs lists the stored runs, #runs/ID shows one, #compare/12,13 compares, #trend/QUERY draws
// a trend: links can be kept, and Back returns to the view before.
route();

// After a reload (or in a new tab) the run view shows the last test: one still running (the
// newest), else the last to end, with its result and its settings (the UI keeps a finished
// test for 10 minutes; the stored runs keep it for good).
api("/api/tests").then((tests) => {
  const running = tests.filter((t) => t.state === "running" || t.state === "starting" || t.state === "stopping");
  const last = running.pop() || tests[tests.length - 1];
  if (last) follow(last.id, true);
}).catch(() => {});
