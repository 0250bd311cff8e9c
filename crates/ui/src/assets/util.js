// The page's small tools: DOM building, numbers as people read them, the API, and a
// command line's words. Text from the server is only ever set as text, never parsed as HTML.

const SVG = "http://www.w3.org/2000/svg";

export const $ = (sel) => document.querySelector(sel);

/** An element (`svg:line` for SVG ones) with attributes and children (nodes or text). */
export function el(tag, attrs, ...children) {
  const node = tag.startsWith("svg:")
    ? document.createElementNS(SVG, tag.slice(4))
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

// How many intervals the live charts and table keep: 300, or fewer with ?window=N (10 to 300),
// so a test of the page can pass the window quickly.
export const WINDOW = (() => {
  const asked = Number(new URLSearchParams(location.search).get("window"));
  return Number.isInteger(asked) && asked >= 10 && asked < 300 ? asked : 300;
})();

// ---- numbers ----

const finite = (v) => v !== null && v !== undefined && isFinite(v);
const STEPS = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "K"]];

export function si(v, unit) {
  if (!finite(v)) return "–";
  for (const [n, p] of STEPS) if (Math.abs(v) >= n) return (v / n).toFixed(2) + " " + p + unit;
  return (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2)) + " " + unit;
}
export const bps = (v) => si(v, "bit/s");

const BINARY = ["Ki", "Mi", "Gi", "Ti"];
/** A byte count as the command line writes it (measure::units::format_bytes): binary
 * multiples to three figures, 1.94 GiB, 12.5 MiB, 512 B. */
export function bytes(v) {
  if (!finite(v)) return "–";
  let [x, p] = [v, ""];
  for (const next of BINARY) if (Math.abs(x) >= 1024) [x, p] = [x / 1024, next];
  if (!p) return Math.round(v) + " B";
  return x.toFixed(Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2) + " " + p + "B";
}

/** An axis label: three significant digits at most. */
export function axis(v, unit) {
  for (const [n, p] of STEPS) if (Math.abs(v) >= n) return +(v / n).toPrecision(3) + " " + p + unit;
  return +v.toPrecision(3) + (unit ? " " + unit : "");
}
export const num = (v, d = 1) => (finite(v) ? Number(v).toFixed(d) : "–");
export const int = (v) => (finite(v) ? Math.round(v).toLocaleString("en") : "–");
export const us = (v) => (finite(v) ? (Math.abs(v) < 100 ? num(v, 1) : int(v)) + " µs" : "–");
export const pct = (v, d = 1) => (finite(v) ? num(v, d) + " %" : "–");
export const flowLabel = (f) => ({ client_to_server: "c→s", server_to_client: "s→c" }[f] || f);
export const when = (ms) => new Date(ms).toLocaleString();

/** A figure of any size with as many decimals as it needs: 12,345, 123, 12.3, 1.23, 0.123. */
export function figure(v) {
  if (typeof v !== "number" || !isFinite(v)) return "–";
  const a = Math.abs(v);
  return v.toLocaleString("en", { maximumFractionDigits: a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3 });
}
export { finite };

// ---- the API ----

/** `text` as JSON: `null` when empty, `{ error: text }` when it is not JSON. */
function jsonOf(text) {
  try { return text ? JSON.parse(text) : null; } catch (e) { return { error: text }; }
}

/** A request's answer as text; an answer that is not 2xx throws its `error`. */
async function request(path, options) {
  const res = await fetch(path, Object.assign({ credentials: "same-origin" }, options));
  const text = await res.text();
  if (!res.ok) {
    const body = jsonOf(text);
    throw new Error((body && body.error) || res.status + " " + res.statusText);
  }
  return text;
}

/** A JSON request; an answer that is not 2xx throws its `error`. */
export async function api(path, options) {
  return jsonOf(await request(path, options));
}

/** GETs plain-text `path`; a failure throws as for `api`. */
export async function apiText(path) {
  return request(path);
}

/** Hands `blob` to the browser as a download named `name`. */
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = el("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// ---- command lines ----

/**
 * A command line's words, as a shell splits them: spaces separate, '…' and "…" quote,
 * a backslash escapes the next character. Throws on an unclosed quote.
 */
export function splitWords(text) {
  const words = [];
  let word = null, quote = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"' && i + 1 < text.length) word += text[++i];
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word = word ?? "";
    } else if (c === "\\" && i + 1 < text.length) {
      word = (word ?? "") + text[++i];
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? "") + c;
    }
  }
  if (quote) throw new Error("a " + quote + " is not closed");
  if (word !== null) words.push(word);
  return words;
}
