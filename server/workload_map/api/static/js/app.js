// The router: #/workloads[?filters], #/workloads/<cluster>/<namespace>/<group>/<kind>/<name>,
// #/gpus, #/definitions, #/studio[?workload=...]. Each view renders into <main> and returns
// a cleanup function (closing its subscription).

import { clear, errorBox, h } from "./dom.js";
import * as workloads from "./workloads.js";
import * as workload from "./workload.js";
import * as gpus from "./gpus.js";
import * as definitions from "./definitions.js";
import * as studio from "./studio.js";

const main = document.getElementById("main");
let cleanup = () => {};

export function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: Object.fromEntries(new URLSearchParams(query)) };
}

async function route() {
  cleanup();
  cleanup = () => {};
  const { parts, params } = parseHash();
  const section = parts[0] || "workloads";
  for (const link of document.querySelectorAll("nav a[data-section]")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  clear(main, h("p", { class: "muted" }, "Loading…"));
  try {
    let done;
    if (section === "workloads" && parts.length >= 6) done = await workload.render(main, parts.slice(1), params);
    else if (section === "workloads") done = await workloads.render(main, params);
    else if (section === "gpus") done = await gpus.render(main, params);
    else if (section === "definitions") done = await definitions.render(main, params);
    else if (section === "studio") done = await studio.render(main, params);
    else clear(main, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/workloads" }, "Workloads")));
    if (typeof done === "function") cleanup = done;
  } catch (err) {
    clear(main, h("h1", {}, "Could not load this page"), errorBox(err));
  }
}

window.addEventListener("hashchange", route);
if (!location.hash) history.replaceState(null, "", "#/workloads");
route();
