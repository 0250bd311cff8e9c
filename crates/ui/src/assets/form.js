// The run form: the request it asks for (docs/API.md, POST /api/tests: the options form, or the
// command's own words when the "arguments" field is filled or the kind is a series), and the
// form a request fills again, so a test followed after a reload or from another tab shows its
// own settings. Which kinds take a field (its label's `data-field`) is the server's word
// (GET /api/kinds, derived from the same table and checks the API applies): a field is shown
// and sent only for the kinds listed with it, and tests/ui_form.rs holds that against the API.

import { $, api, splitWords } from "./util.js";

// Kinds run as the command's words, with an example of them for the arguments field.
export const SERIES = {
  sweep: "streams --values 1,2,4 -- tcp -t 2",
  rfc2544: "--frame 64,1518 --trial 1s --link-speed 10G",
  pps: "--frame 64,1518 --flows 1,100 -t 1",
  mesh: "HOST1 HOST2 HOST3 --test tcp -t 5",
};
const TEST_EXAMPLE = "extra words, e.g. -P 2 --no-delay";
// Each name a request's kind may give (the record's too, tcp_stream) → the command's name, and
// each command's fields, as GET /api/kinds says (`null` until then, or if it failed: every
// field shows, and the API says what it refuses).
const KINDS = {};
let FIELDS = null;
/** Settles once the kinds' fields are known (or could not be). */
export const kindsLoaded = api("/api/kinds").then((kinds) => {
  FIELDS = {};
  const [one, series] = document.querySelectorAll("#run-form [name=kind] optgroup");
  for (const k of kinds) {
    FIELDS[k.kind] = k.fields;
    for (const name of k.names) KINDS[name] = k.kind;
    const option = new Option(k.kind + ": " + k.summary, k.kind);
    (k.kind in SERIES ? series : one).append(option);
  }
  // The first single test is the form's first choice, as a hand-written list had it.
  document.querySelector("#run-form [name=kind]").value = one.firstElementChild?.value ?? "";
}).catch(() => {});
// The fields sent as they are (text or number), and the short options that mean the same.
const TEXT = ["host", "rate", "length", "latency"];
const NUMBER = ["time", "parallel", "repeat"];
const SHORT = { t: "time", P: "parallel", b: "rate", l: "length", R: "reverse" };

/**
 * Whether `kind` is given only as its command's words: it takes none of the form's fields
 * (sweep). A series that takes fields (pps, rfc2544: the host, the time, …) shows them; until
 * the kinds are known every series is words.
 */
function wordsOnly(kind) {
  return FIELDS ? !(FIELDS[kind] || []).length : kind in SERIES;
}

/** Whether field `name` of `form` is one kind `kind` takes (its label's `data-field`). */
function takes(form, name, kind) {
  const field = form.elements.namedItem(name)?.closest("label")?.dataset.field;
  return !field || !FIELDS || (FIELDS[kind] || []).includes(field);
}

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
  if (wordsOnly(kind)) {
    if (!words.length) throw new Error("Arguments: " + kind + " needs its words, e.g. " + SERIES[kind]);
    return withTags({ args: [kind, ...words] });
  }
  const test = { kind };
  const rpm = kind === "rpm";
  const sent = (name) => text(name) && takes(form, name, kind);
  for (const name of TEXT) if (sent(name)) test[name] = text(name);
  for (const name of NUMBER) if (sent(name)) test[name] = Number(text(name));
  // rpm loads both ways by default; "server → client" is its download direction alone.
  if (rpm && text("direction") === "reverse") test.direction = "down";
  else if (!rpm && sent("direction")) test[text("direction")] = true;
  if (sent("extra")) {
    let extra;
    try { extra = JSON.parse(text("extra")); } catch (e) { throw new Error("More options: " + e.message); }
    if (!extra || typeof extra !== "object" || Array.isArray(extra)) throw new Error("More options: a JSON object, e.g. {\"window\": \"4M\"}");
    Object.assign(test, extra);
  }
  if (!words.length) return withTags(test);
  return withTags({ args: [kind, ...(test.host ? [test.host] : []), ...optionWords(test), ...words] });
}

// The arguments typed for each kind, kept while another is chosen: one command's words are not
// another's (a sweep's left in the field would be sent to tcp), and choosing a kind again gives
// back what was typed for it.
const ARGS = {};
let argsKind = null;

/** Shows only the fields the chosen kind takes, and the arguments typed for it. */
export function kindChanged() {
  const form = $("#run-form");
  const kind = form.elements.namedItem("kind").value;
  const args = form.elements.namedItem("args");
  if (argsKind !== null && argsKind !== kind) {
    ARGS[argsKind] = args.value;
    args.value = ARGS[kind] ?? "";
  }
  argsKind = kind;
  for (const label of form.querySelectorAll("label[data-field]")) {
    // A kind that takes no fields is given as its words.
    label.hidden = wordsOnly(kind) || !takes(form, label.dataset.field, kind);
  }
  form.elements.namedItem("args").placeholder = kind in SERIES ? SERIES[kind] : TEST_EXAMPLE;
}

/** A word as a shell would need it quoted (the arguments field is split as a shell does). */
function quoted(word) {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : "'" + word.replace(/'/g, "'\\''") + "'";
}

function tagsText(tags) {
  if (!tags) return "";
  if (Array.isArray(tags)) return tags.join(", ");
  if (typeof tags === "object") return Object.entries(tags).map(([k, v]) => k + "=" + v).join(", ");
  return String(tags);
}

/**
 * Fills the form with `request` (as `GET /api/tests/ID` gives it back): the fields it names,
 * the rest empty, what no field shows under "More options" (or, for a series, its words).
 */
export function fillForm(request) {
  const form = $("#run-form");
  if (!request || typeof request !== "object") return;
  const set = (name, value) => { form.elements.namedItem(name).value = value ?? ""; };
  for (const name of [...TEXT, ...NUMBER, "direction", "extra", "args"]) set(name, "");
  set("tags", tagsText(request.tags ?? request.tag));
  const kindSelect = form.elements.namedItem("kind");
  const known = (kind) => [...kindSelect.options].some((o) => o.value === kind);
  if (Array.isArray(request.args)) {
    const [first, ...rest] = request.args;
    if (known(first)) set("kind", first);
    set("args", rest.map(quoted).join(" "));
    argsKind = kindSelect.value;
    kindChanged();
    return;
  }
  const kind = KINDS[request.kind] || request.kind;
  if (known(kind)) set("kind", kind);
  const extra = {};
  const words = [];
  for (const [key, value] of Object.entries(request)) {
    const name = SHORT[key] || key.replace(/-/g, "_");
    if (key === "kind" || key === "tags" || key === "tag" || value === null || value === false) continue;
    if (wordsOnly(kind)) {
      // A series asked for as options: its words, hosts first.
      if (name === "host" || name === "hosts") words.unshift(...[].concat(value).map(String));
      else words.push(...optionWords({ [key]: value }));
    } else if (!takes(form, name, kind) || typeof value === "object") extra[key] = value;
    else if ((TEXT.includes(name) || NUMBER.includes(name)) && name !== "latency") set(name, value);
    else if (name === "latency" && (value === true || value === "udp" || value === "tcp")) set("latency", value === true ? "udp" : value);
    else if ((name === "reverse" || name === "bidir") && value === true) set("direction", name);
    else if (name === "direction" && kind === "rpm" && value === "down") set("direction", "reverse");
    else extra[key] = value;
  }
  if (words.length) set("args", words.map(quoted).join(" "));
  if (Object.keys(extra).length) set("extra", JSON.stringify(extra));
  argsKind = kindSelect.value;
  kindChanged();
}
