// The run view: the form becomes a test (docs/API.md, POST /api/tests: the options form, or the
// command's own words when the "arguments" field is filled or the kind is a series), and the
// test's events (/api/tests/ID/events) drive the live charts, the interval table, the series
// view and the summary.

import { $, el, api, splitWords } from "./util.js";
import { LiveView } from "./live.js";
import { SeriesView } from "./series.js";
import { showSummary } from "./summary.js";
import { RpmView } from "./rpm.js";

// Kinds run as the command's words, with an example of them for the arguments field.
const SERIES = {
  sweep: "streams --values 1,2,4 -- tcp -t 2",
  rfc2544: "--frame 64,1518 --trial 1s --link-speed 10G",
  pps: "--frame 64,1518 --flows 1,100 -t 1",
  mesh: "HOST1 HOST2 HOST3 --test tcp -t 5",
};
const TEST_EXAMPLE = "extra words, e.g. -P 2 --no-delay";
// Fields of a single test that rpm does not take (it takes the host, its seconds per
// direction, its connections and its direction).
const NOT_RPM = ["rate", "length", "latency", "repeat", "auth_key"];

function tagsOf(text) {
  const tags = {};
  for (const item of text.split(",").map((t) => t.trim()).filter(Boolean)) {
    const at = item.indexOf("=");
    if (at <= 0) throw new Error("Tags: '" + item + "' is not KEY=VALUE");
    tags[item.slice(0, at).trim()] = item.slice(at + 1).trim();
  }
  return tags;
}

// The options form's keys as command-line words, as the UI's backend makes them.
function optionWords(test) {
  const words = [];
  for (const [key, value] of Object.entries(test)) {
    if (key === "kind" || key === "host" || value === false || value === null) continue;
    const name = key.length === 1 ? "-" + key : "--" + key.replace(/_/g, "-");
    for (const v of Array.isArray(value) ? value : [value]) words.push(v === true ? name : name + "=" + v);
  }
  return words;
}

/** The request the form asks for; throws, naming the field, when a field is wrong. */
export function requestOf(form) {
  const data = new FormData(form);
  const text = (name) => String(data.get(name) || "").trim();
  const kind = text("kind");
  const tags = tagsOf(text("tags"));
  const words = splitWords(text("args"));
  const withTags = (request) => (Object.keys(tags).length ? Object.assign(request, { tags }) : request);
  if (kind in SERIES) {
    if (!words.length) throw new Error("Arguments: " + kind + " needs its words, e.g. " + SERIES[kind]);
    return withTags({ args: [kind, ...words] });
  }
  const test = { kind };
  const rpm = kind === "rpm";
  const takes = (name) => text(name) && !(rpm && NOT_RPM.includes(name));
  for (const name of ["host", "rate", "length", "auth_key", "latency"]) if (takes(name)) test[name] = text(name);
  for (const name of ["time", "parallel", "repeat"]) if (takes(name)) test[name] = Number(text(name));
  // rpm loads both ways by default; "server → client" is its download direction alone.
  if (rpm && text("direction") === "reverse") test.direction = "down";
  else if (!rpm && text("direction")) test[text("direction")] = true;
  if (text("extra")) {
    let extra;
    try { extra = JSON.parse(text("extra")); } catch (e) { throw new Error("More options: " + e.message); }
    if (!extra || typeof extra !== "object" || Array.isArray(extra)) throw new Error("More options: a JSON object, e.g. {\"window\": \"4M\"}");
    Object.assign(test, extra);
  }
  if (!words.length) return withTags(test);
  return withTags({ args: [kind, ...(test.host ? [test.host] : []), ...optionWords(test), ...words] });
}

/** Shows only the fields the chosen kind takes. */
export function kindChanged() {
  const kind = $("#run-form [name=kind]").value;
  const series = kind in SERIES;
  for (const label of document.querySelectorAll("#run-form .test-only")) label.hidden = series;
  if (kind === "rpm") for (const name of NOT_RPM) $("#run-form [name=" + name + "]").closest("label").hidden = true;
  $("#run-form [name=args]").placeholder = series ? SERIES[kind] : TEST_EXAMPLE;
}

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
  let request;
  try { request = requestOf(event.target); } catch (e) { setState(e.message, true); return; }
  setState("starting…");
  $("#start").disabled = true;
  try {
    const { id } = await api("/api/tests", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(request),
    });
    follow(id);
  } catch (e) {
    setState(e.message, true);
    $("#start").disabled = false;
  }
}

/** Follows test `id`'s events: a replay from its start, then live. */
export function follow(id) {
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
  api("/api/tests/" + id).then((t) => {
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
  const how = result.interrupted ? "stopped early; " : result.exit_code ? "ended with exit code " + result.exit_code + "; " : "finished; ";
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
