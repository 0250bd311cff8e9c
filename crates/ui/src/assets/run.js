// The run view: the form (form.js) becomes a test, and the test's events
// (/api/tests/ID/events) drive the live charts, the interval table, the series view and the
// summary. A followed test (the last one, after a reload; or one another tab or a script
// started) puts its own request back in the form.

import { $, el, api } from "./util.js";
import { requestOf, fillForm, kindsLoaded } from "./form.js";
import { LiveView } from "./live.js";
import { SeriesView } from "./series.js";
import { showSummary } from "./summary.js";
import { RpmView } from "./rpm.js";

function setState(text, error) {
  const s = $("#run-state");
  s.textContent = text;
  s.className = error ? "state error" : "state";
}

// `replay`: the next `started` (a series: `begin`; rpm: `tick`) begins the log again (a new
// or reconnected stream replays it all), rather than a later run of the same series.
const run = { source: null, id: null, live: null, series: null, rpm: null, replay: true };

function views() {
  if (!run.live) {
    run.live = new LiveView($("#live-charts"), $("#intervals"));
    run.series = new SeriesView();
    run.rpm = new RpmView();
  }
  return run;
}

export async function startTest(event) {
  event.preventDefault();
  await kindsLoaded; // which fields the kind takes
  let request;
  try { request = requestOf(event.target); } catch (e) { setState(e.message, true); return; }
  setState("starting…");
  $("#start").disabled = true;
  try {
    const { id } = await api("/api/tests", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(request),
    });
    follow(id, false);
  } catch (e) {
    setState(e.message, true);
    $("#start").disabled = false;
  }
}

/**
 * Follows test `id`'s events: a replay from its start, then live; `fill`: its request goes
 * back in the form (a test this page did not just start from it).
 */
export function follow(id, fill) {
  if (run.source) run.source.close();
  const { live, series, rpm } = views();
  run.id = id;
  run.replay = true;
  live.reset(null);
  series.reset();
  rpm.reset();
  $("#live").hidden = false;
  $("#summary").replaceChildren();
  $("#notes").replaceChildren();
  $("#live-title").textContent = "test " + id;
  // The command's words, until a single test's `started` says more.
  Promise.all([api("/api/tests/" + id), kindsLoaded]).then(([t]) => {
    if (fill && run.id === id) fillForm(t.request);
    if (run.id === id && $("#live-title").textContent === "test " + id) {
      $("#live-title").textContent = "test " + id + ": linerate " + (t.command || []).join(" ");
    }
  }).catch(() => {});
  $("#stop").disabled = false;
  $("#start").disabled = true;
  const source = new EventSource("/api/tests/" + id + "/events");
  run.source = source;
  const on = (name, handle) => source.addEventListener(name, (e) => handle(JSON.parse(e.data)));
  on("started", started);
  source.onmessage = (e) => live.add(JSON.parse(e.data));
  on("begin", (info) => {
    // A series' first event: a replay starts here (its points' tests each give `started`).
    if (run.replay) {
      $("#summary").replaceChildren();
      $("#notes").replaceChildren();
      run.replay = false;
    }
    series.begin(info);
  });
  on("point", (point) => series.point(point));
  on("tick", (tick) => {
    if (run.replay) { rpm.reset(); run.replay = false; }
    rpm.tick(tick);
    setState("running");
  });
  on("note", (note) => {
    const notes = $("#notes");
    notes.append(el("li", {}, note.text));
    while (notes.children.length > 50) notes.firstElementChild.remove(); // the last 50
  });
  on("stored", (stored) => setState("running; stored run #" + stored.run_id));
  on("summary", (result) => ended(source, result, null));
  source.addEventListener("error", (e) => {
    if (e.data) ended(source, null, JSON.parse(e.data).error);
    else if (source.readyState === EventSource.CLOSED) ended(source, null, "the connection to the UI was lost");
    else run.replay = true; // reconnecting: the log comes again from its start
  });
}

function started(info) {
  const spec = info.spec || {};
  const kind = (spec.params && spec.params.kind) || spec.kind || null;
  run.live.reset(kind);
  if (run.replay) {
    run.series.reset();
    $("#summary").replaceChildren();
    $("#notes").replaceChildren();
    run.replay = false;
  }
  const server = info.server;
  const facts = server ? " — server " + (server.hostname || "?") + " (linerate " + server.version + ", " + server.cores + " cores)" : "";
  const streams = spec.streams ? ", " + spec.streams + " stream(s) per direction" : "";
  $("#live-title").textContent = "test " + info.id + ": linerate " + (info.command || []).join(" ") + facts + streams;
  setState("running");
}

function ended(source, result, error) {
  source.close();
  if (run.source === source) run.source = null;
  $("#stop").disabled = true;
  $("#start").disabled = false;
  if (error) { setState(error, true); return; }
  run.live.drawSoon();
  const failed = result.exit_code ? "ended with exit code " + result.exit_code + (result.error ? ": " + result.error : "") + "; " : null;
  const how = result.interrupted ? "stopped early; " : failed || "finished; ";
  if (result.summary) {
    setState(how + "stored as run #" + result.run_id);
    showSummary($("#summary"), result.summary);
  } else {
    const ids = result.run_ids || [];
    setState(how + (ids.length ? "stored as run" + (ids.length > 1 ? "s " : " ") + ids.map((i) => "#" + i).join(", ") : "nothing stored"));
    if (result.document && result.document.kind === "rpm") run.rpm.finish(result.document);
    else run.series.finish(result);
  }
  document.dispatchEvent(new CustomEvent("linerate:stored"));
}

export async function stopTest() {
  if (run.id === null) return;
  $("#stop").disabled = true;
  setState("stopping…");
  try { await api("/api/tests/" + run.id + "/stop", { method: "POST" }); } catch (e) { setState(e.message, true); }
}
