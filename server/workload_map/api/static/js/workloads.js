// The workload list: server-side filters and paging (100 rows a page, any number of
// workloads), live refresh from the workloadPhaseChanged subscription.

import { ApiError, gql, rest, subscribe } from "./api.js";
import { age, chip, clear, errorBox, gpus, h } from "./dom.js";

export const PAGE_SIZE = 100;
const PHASES = ["Initializing", "Running", "Completed", "Failed", "Degraded", "Suspended", "Suspending", "Resuming",
  "Undefined"];
const CHANGES = `subscription ($namespace: String, $kind: String, $cluster: String) {
  workloadPhaseChanged(namespace: $namespace, kind: $kind, cluster: $cluster) { phase workload { name } } }`;
const OPTIONS = `{ namespaces: gpuSummary(groupBy: NAMESPACE) { key }
  kinds: gpuSummary(groupBy: KIND) { key } clusters { name } }`;

export function workloadHref(row) {
  const parts = [row.cluster || "-", row.namespace || "-", row.group || "core", row.kind, row.name];
  return "#/workloads/" + parts.map(encodeURIComponent).join("/");
}

// "JobSet.jobset.x-k8s.io" (a gpuSummary KIND key) -> { kind: "JobSet", group: "jobset.x-k8s.io" }
// ("core" for a key without a group); a bare "JobSet" (typed in a URL) filters the Kind only.
export function splitKind(key) {
  if (!key) return { kind: "", group: "" };
  const [kind, ...group] = key.split(".");
  return { kind, group: group.length ? group.join(".") : "" };
}

export function filterHref(filters) {
  const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
  return "#/workloads" + (query.toString() ? `?${query}` : "");
}

function select(name, label, values, current) {
  const id = `filter-${name}`;
  return h("span", { class: "field" }, h("label", { for: id }, label),
    h("select", { id, name }, h("option", { value: "" }, "all"),
      values.map((v) => h("option", { value: v, selected: v === current }, v.replace(".", " · ")))));
}

async function filterOptions() {
  try {
    const data = await gql(OPTIONS);
    return { namespaces: data.namespaces.map((b) => b.key), kinds: data.kinds.map((b) => b.key),
      clusters: data.clusters.map((c) => c.name) };
  } catch (err) {
    return { namespaces: [], kinds: [], clusters: [] };
  }
}

function row(item) {
  const gpu = item.gpu || {};
  const r = item.replicas || {};
  return h("tr", { "data-name": item.name },
    h("td", {}, h("a", { href: workloadHref(item) }, item.name)),
    h("td", {}, item.kind), h("td", {}, item.namespace || ""), h("td", {}, item.cluster || ""),
    h("td", {}, chip(item.phase)),
    h("td", { class: "num" }, `${r.ready ?? 0}/${r.desired ?? 0}`),
    h("td", { class: "num" }, gpus(gpu.requestedBySpec)), h("td", { class: "num" }, gpus(gpu.requestedByPods)),
    h("td", { class: "num" }, gpus(gpu.allocated)),
    h("td", { class: "num", title: item.createdAt || "" }, age(item.createdAt)));
}

function table(items) {
  return h("table", { class: "grid", "aria-label": "Workloads" },
    h("thead", {}, h("tr", {}, ["Name", "Kind", "Namespace", "Cluster", "Phase", "Pods ready", "GPUs spec",
      "GPUs pods", "GPUs allocated", "Age"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, items.length ? items.map(row) : h("tr", {}, h("td", { colspan: 10, class: "muted" },
      "No workload matches these filters."))));
}

export async function render(main, params) {
  const filters = { namespace: params.namespace || "", kind: params.kind || "", phase: params.phase || "",
    cluster: params.cluster || "", contains: params.contains || "", node: params.node || "" };
  const options = await filterOptions();
  const results = h("div", { id: "results" });
  const live = h("span", { class: "live", id: "live" }, "connecting…");
  const text = h("input", { id: "filter-contains", name: "contains", type: "search", value: filters.contains,
    placeholder: "part of a name" });
  const form = h("form", { class: "filters", role: "search", onsubmit: (e) => { e.preventDefault(); apply(); } },
    select("namespace", "Namespace", options.namespaces, filters.namespace),
    select("kind", "Kind", options.kinds, filters.kind),
    select("phase", "Phase", PHASES, filters.phase),
    select("cluster", "Cluster", options.clusters, filters.cluster),
    h("span", { class: "field" }, h("label", { for: "filter-contains" }, "Name"), text),
    filters.node ? h("span", { class: "field" }, h("label", { for: "filter-node" }, "Node"),
      h("input", { id: "filter-node", name: "node", value: filters.node, readonly: true })) : "",
    h("button", { type: "submit" }, "Filter"),
    h("a", { href: "#/workloads", class: "reset" }, "Clear filters"));
  form.addEventListener("change", (e) => { if (e.target.tagName === "SELECT") apply(); });
  function apply() {
    location.hash = filterHref(Object.fromEntries(new FormData(form)));
  }
  clear(main, h("div", { class: "heading" }, h("h1", {}, "Workloads"), live), form, results);

  const cursors = [null];  // cursor of each page shown so far (the first page has none)
  let page = 0;
  let loading = false;
  let again = false;
  async function load() {
    if (loading) { again = true; return; }
    loading = true;
    try {
      const path = filters.namespace ? `/api/v1/namespaces/${encodeURIComponent(filters.namespace)}/workloads`
        : "/api/v1/workloads";
      const body = await rest(path, { ...splitKind(filters.kind), phase: filters.phase, cluster: filters.cluster,
        contains: filters.contains, node: filters.node, limit: PAGE_SIZE, continue: cursors[page] });
      cursors[page + 1] = body.continue;
      const first = page * PAGE_SIZE + (body.count ? 1 : 0);
      const pager = h("nav", { class: "pager", "aria-label": "Pages" },
        h("button", { type: "button", disabled: page === 0, onclick: () => { page -= 1; load(); } }, "Previous"),
        h("span", { id: "count" }, `${first}–${page * PAGE_SIZE + body.count} of ${body.totalCount}`),
        h("button", { type: "button", disabled: !body.continue, onclick: () => { page += 1; load(); } }, "Next"));
      clear(results, table(body.items), pager);
    } catch (err) {
      if (err instanceof ApiError && err.status === 400 && page > 0) { page = 0; cursors.length = 1; again = true; }
      else clear(results, errorBox(err));
    } finally {
      loading = false;
      if (again) { again = false; load(); }
    }
  }
  await load();
  let timer = null;
  const stop = subscribe(CHANGES, { namespace: filters.namespace || null, kind: splitKind(filters.kind).kind || null,
    cluster: filters.cluster || null }, () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; load(); }, 300);  // one refresh per burst of changes
  }, (state) => { live.textContent = state === "live" ? "live" : "reconnecting…"; live.dataset.state = state; });
  return () => { stop(); clearTimeout(timer); };
}
