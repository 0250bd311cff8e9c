// The page's views (run, stored runs, compare, trend): one shown at a time, named in the URL's
// hash (#runs, #runs/12, #compare/12,13, #trend/runs=…) so a view can be linked to and
// survives a reload.

const hooks = new Map();

/** Runs `fn(arg)` each time view `name` is shown. */
export function onShow(name, fn) {
  hooks.set(name, fn);
}

/** Shows view `name` (`arg`: what follows its name in the hash, e.g. a run id). */
export function showView(name, arg) {
  const hash = "#" + name + (arg ? "/" + arg : "");
  if (location.hash !== hash) history.replaceState(null, "", hash);
  // The compare and trend views belong to the stored runs' tab.
  const tab = name === "compare" || name === "trend" ? "runs" : name;
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.dataset.view === tab);
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== "view-" + name;
  const fn = hooks.get(name);
  if (fn) fn(arg);
}
