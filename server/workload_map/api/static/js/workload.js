// One workload: the tree workload -> roles -> instances -> pods, conditions, gangs, the
// definition used, and the stale / error states, refreshed live on its phase changes.

import { gql, subscribe } from "./api.js";
import { age, chip, clear, errorBox, gpus, h } from "./dom.js";

const GPU = "gpu { requestedBySpec requestedByPods allocated }";
const REPLICAS = "replicas { desired current ready }";
const POD = "name phase node ready reason resources { gpus }";
export const QUERY = `query ($namespace: String, $group: String!, $kind: String!, $name: String!, $cluster: String) {
  workload(namespace: $namespace, group: $group, kind: $kind, name: $name, cluster: $cluster) {
    name namespace kind group apiVersion cluster definition origin phase phases rawPhase createdAt
    ${REPLICAS} ${GPU}
    conditions { type status reason message }
    roles { name component instance kind definition ${REPLICAS} ${GPU} podResources { gpus }
      instances { id ${REPLICAS} podResources { gpus } pods { ${POD} } } }
    unattributedPods { ${POD} unattributedReason }
    gangGroups { name form minMember subGroups { name minMember } pods }
    errors { ...E }
    components { name errors { ...E } children { name errors { ...E } children { name errors { ...E } } } }
  }
  clusters { name stale since error synced }
}
fragment E on ResolutionError { component field expression message }`;
const CHANGES = `subscription ($namespace: String, $kind: String, $cluster: String) {
  workloadPhaseChanged(namespace: $namespace, kind: $kind, cluster: $cluster) { workload { name } } }`;

function figures(gpu) {
  return h("span", { class: "gpus" }, `GPUs ${gpus(gpu.requestedBySpec)} spec · ${gpus(gpu.requestedByPods)} pods · `
    + `${gpus(gpu.allocated)} allocated`);
}

function replicas(r) {
  return h("span", { class: "pods" }, `pods ${r.ready}/${r.desired} ready ·`);
}

const title = (phase) => phase.charAt(0) + phase.slice(1).toLowerCase();

function pod(p) {
  return h("li", { class: "pod" }, h("span", { class: "label" }, "Pod"), " ", h("code", {}, p.name), " ",
    chip(p.phase), p.ready ? " ready" : ` not ready${p.reason ? ` (${p.reason})` : ""}`,
    ` · node ${p.node || "unscheduled"} · GPUs ${gpus(p.resources.gpus)}`,
    p.unattributedReason ? h("span", { class: "muted" }, ` · ${p.unattributedReason}`) : "");
}

function instance(i) {
  return h("li", { class: "instance" },
    h("span", { class: "label" }, "Instance"), " ", h("strong", {}, i.id || "(no id)"), " ", replicas(i.replicas),
    ` GPUs per pod ${gpus(i.podResources.gpus)}`,
    i.pods.length ? h("ul", {}, i.pods.map(pod)) : h("p", { class: "muted" }, "no pods"));
}

function role(r) {
  return h("li", { class: "role", "data-role": r.name },
    h("span", { class: "label" }, "Role"), " ", h("strong", { class: "role-name" }, r.name),
    ` (${r.kind || "logical"}) `, replicas(r.replicas), " ", figures(r.gpu),
    h("ul", {}, r.instances.map(instance)));
}

function tree(w) {
  return h("section", { "aria-labelledby": "tree-title" }, h("h2", { id: "tree-title" }, "Structure"),
    h("ul", { class: "tree" }, h("li", { class: "workload" },
      h("span", { class: "label" }, "Workload"), " ", h("strong", {}, w.name), " ", chip(w.phase), " ",
      replicas(w.replicas), " ", figures(w.gpu),
      h("ul", {}, w.roles.map(role)),
      w.unattributedPods.length ? h("div", {}, h("h3", {}, "Pods no role claimed"),
        h("ul", {}, w.unattributedPods.map(pod))) : "")));
}

function tiles(w) {
  const tile = (label, value, id) => h("div", { class: "tile", id }, h("span", { class: "tile-label" }, label),
    h("span", { class: "tile-value" }, value));
  return h("div", { class: "tiles" },
    tile("Workloads", "1", "tile-workloads"), tile("Roles", String(w.roles.length), "tile-roles"),
    tile("Pods ready", `${w.replicas.ready}/${w.replicas.desired}`, "tile-pods"),
    tile("GPUs (spec)", gpus(w.gpu.requestedBySpec), "tile-gpus"),
    tile("GPUs (pods)", gpus(w.gpu.requestedByPods), "tile-gpus-pods"),
    tile("GPUs allocated", gpus(w.gpu.allocated), "tile-gpus-allocated"));
}

function conditions(list) {
  if (!list.length) return h("p", { class: "muted" }, "No conditions.");
  return h("table", { class: "grid" }, h("thead", {}, h("tr", {}, ["Type", "Status", "Reason", "Message"]
    .map((t) => h("th", { scope: "col" }, t)))),
  h("tbody", {}, list.map((c) => h("tr", {}, h("td", {}, c.type), h("td", {}, c.status ?? ""),
    h("td", {}, c.reason ?? ""), h("td", {}, c.message ?? "")))));
}

function gangs(list) {
  if (!list.length) return h("p", { class: "muted" }, "No gang scheduling instructions.");
  return h("ul", {}, list.map((g) => h("li", {}, h("strong", {}, g.name), ` (${g.form}) min members ${g.minMember}`,
    g.subGroups.length ? h("ul", {}, g.subGroups.map((s) => h("li", {}, `${s.name}: min ${s.minMember}`))) : "",
    g.pods.length ? h("p", { class: "muted" }, `pods: ${g.pods.join(", ")}`) : "")));
}

function problems(w) {
  const nested = (c) => [...c.errors, ...(c.children || []).flatMap(nested)];
  const all = [...w.errors, ...w.components.flatMap(nested)];
  if (!all.length) return "";
  return h("div", { class: "error-box", role: "alert", id: "resolution-errors" },
    h("strong", {}, `${all.length} resolution problem(s); the rest of the view is still shown`),
    h("ul", {}, all.map((e) => h("li", {}, e.component ? `${e.component}: ` : "", h("code", {}, e.field), ` ${e.message}`,
      e.expression ? h("div", {}, h("code", {}, e.expression)) : ""))));
}

function staleness(w, clusters) {
  const c = clusters.find((x) => x.name === w.cluster) || (clusters.length === 1 ? clusters[0] : null);
  if (!c || (!c.stale && !c.error)) return "";
  return h("div", { class: "warn-box", role: "status", id: "stale" },
    c.stale ? `Stale: the cache of cluster ${c.name} has not heard from its API server since ${c.since}. ` : "",
    c.error ? `Error: ${c.error}` : "");
}

export async function render(main, [cluster, namespace, group, kind, name]) {
  const vars = { namespace: namespace === "-" ? null : namespace, group: group === "core" ? "" : group, kind, name,
    cluster: cluster === "-" ? null : cluster };
  async function load() {
    let data;
    try {
      data = await gql(QUERY, vars);
    } catch (err) {
      clear(main, h("h1", {}, name), errorBox(err));
      return;
    }
    const w = data.workload;
    if (!w) {
      clear(main, h("h1", {}, name), h("div", { class: "warn-box", role: "status" },
        `No ${kind} ${namespace}/${name} here: it does not exist, no definition covers its kind, or you may not list it.`),
      h("p", {}, h("a", { href: "#/workloads" }, "Back to the workloads")));
      return;
    }
    const studio = `#/studio?workload=${encodeURIComponent([w.cluster, w.namespace || "-", w.group || "core", w.kind,
      w.name].join("/"))}`;
    clear(main,
      h("p", { class: "crumbs" }, h("a", { href: "#/workloads" }, "Workloads"), " / ", w.namespace || "", " / "),
      h("div", { class: "heading" }, h("h1", {}, w.name), chip(w.phase)),
      h("p", {}, `${w.kind} (${w.apiVersion}) in namespace ${w.namespace || "-"}, cluster ${w.cluster || "-"}, age `
        + `${age(w.createdAt)}. Phases: ${w.phases.map(title).join(", ")}${w.rawPhase ? ` (raw: ${w.rawPhase})` : ""}. Definition `,
      h("a", { href: `#/definitions?name=${encodeURIComponent(w.definition)}`, id: "definition-link" }, w.definition),
      ` (${w.origin}). `, h("a", { href: studio }, "Open in the studio")),
      staleness(w, data.clusters), problems(w), tiles(w), tree(w),
      h("section", {}, h("h2", {}, "Conditions"), conditions(w.conditions)),
      h("section", {}, h("h2", {}, "Gang groups"), gangs(w.gangGroups)));
  }
  await load();
  let timer = null;
  const stop = subscribe(CHANGES, { namespace: vars.namespace, kind, cluster: vars.cluster }, (data) => {
    if (data.workloadPhaseChanged.workload.name !== name || timer) return;
    timer = setTimeout(() => { timer = null; load(); }, 300);
  });
  return () => { stop(); clearTimeout(timer); };
}
