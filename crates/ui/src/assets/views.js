// The page's views (run, stored runs, compare, trend): one shown at a time, named in the URL's
// hash (#run, #runs, #runs/12, #compare/12,13, #trend/runs=…) so a view can be linked to and
// survives a reload. Each view shown is a step in the browser's history: Back and Forward, and
// a hash edited by hand, show the view the hash names (`route`).

const hooks = new Map();

/** Runs `fn(arg)` each time view `name` is shown. */
export function onShow(name, fn) {
  hooks.set(name, fn);
}

const VIEWS = ["run", "runs", "compare", "trend"];

/** Shows view `name` (`arg`: what follows its name in the hash, e.g. a run id); `replace`: in
 * place of the history's current step rather than as a new one. */
export function showView(name, arg, replace) {
  const hash = "#" + name + (arg ? "/" + arg : "");
  if (location.hash !== hash) history[replace ? "replaceState" : "pushState"](null, "", hash);
  // The compare and trend views belong to the stored runs' tab.
  const tab = name === "compare" || name === "trend" ? "runs" : name;
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.dataset.view === tab);
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== "view-" + name;
  const fn = hooks.get(name);
  if (fn) fn(arg);
}

/** Shows the view the URL's hash names (the run view for an empty or unknown one). */
export function route() {
  const [name, ...rest] = location.hash.slice(1).split("/");
  if (VIEWS.includes(name)) showView(name, rest.join("/"), true);
  else showView("run", "", true);
}

window.addEventListener("popstate", route);
