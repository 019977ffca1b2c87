// Definitions: in force, shadowed (another registered one for the same kind wins) and
// skipped (invalid stored ones, with every problem and its field path).

import { rest } from "./api.js";
import { clear, h } from "./dom.js";

function state(d) {
  return d.shadowed ? h("span", { class: "chip phase-suspended" }, "Shadowed")
    : h("span", { class: "chip phase-running" }, "In force");
}

function kartaStatus(d) {
  if (d.origin !== "cluster") return h("span", { class: "muted" }, "—");
  const status = d.manifest && d.manifest.status;
  if (!status) return h("span", { class: "muted" }, "no status on the Karta object");
  const conditions = status.conditions || [];
  return conditions.length ? conditions.map((c) => h("div", {}, `${c.type}=${c.status}${c.reason ? ` (${c.reason})` : ""}`))
    : h("code", {}, JSON.stringify(status));
}

function row(d, selected) {
  const manifest = h("details", { open: selected }, h("summary", {}, "manifest"),
    h("pre", {}, JSON.stringify(d.manifest, null, 2)));
  return h("tr", { id: `definition-${d.name}`, "data-name": d.name, class: selected ? "selected" : "" },
    h("td", {}, h("strong", {}, d.name), manifest),
    h("td", {}, `${d.kind}`, h("div", { class: "muted" }, `${d.group || "core"}/${d.version}`)),
    h("td", {}, d.origin), h("td", {}, state(d)), h("td", {}, kartaStatus(d)),
    h("td", {}, d.registeredAt || h("span", { class: "muted" }, "built in")),
    h("td", {}, d.components.join(", ")),
    h("td", {}, h("a", { href: `#/studio?definition=${encodeURIComponent(d.name)}` }, "Studio")));
}

function skipped(list) {
  if (!list.length) return h("p", { class: "muted", id: "skipped-none" }, "No stored definition was skipped.");
  return h("table", { class: "grid", id: "skipped" }, h("thead", {}, h("tr", {}, ["Name", "Origin", "Why it is skipped"]
    .map((t) => h("th", { scope: "col" }, t)))),
  h("tbody", {}, list.map((s) => h("tr", { "data-name": s.name }, h("td", {}, s.name), h("td", {}, s.origin),
    h("td", {}, h("ul", {}, s.problems.map((p) => h("li", {}, h("code", {}, p.path), ` ${p.message}`))))))));
}

export async function render(main, params) {
  const body = await rest("/api/v1/definitions");
  const origin = params.origin || "";
  const items = body.items.filter((d) => !origin || d.origin === origin);
  const origins = [...new Set(body.items.map((d) => d.origin))].sort();
  const inForce = body.items.filter((d) => !d.shadowed).length;
  clear(main, h("h1", {}, "Definitions"),
    h("p", {}, `${inForce} in force, ${body.items.length - inForce} shadowed, ${body.skipped.length} skipped. `,
      "Origins: ", origins.map((o, i) => [i ? ", " : "", h("a", { href: `#/definitions?origin=${o}` }, o)]),
      origin ? [" · ", h("a", { href: "#/definitions" }, "all")] : ""),
    h("table", { class: "grid", id: "definitions" }, h("thead", {}, h("tr", {}, ["Name", "Root kind", "Origin",
      "State", "Karta status", "Registered", "Components", ""].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, items.map((d) => row(d, d.name === params.name)))),
    h("h2", {}, "Skipped"), skipped(body.skipped));
  const chosen = params.name && document.getElementById(`definition-${params.name}`);
  if (chosen) chosen.scrollIntoView();
}
