// GPU totals and one bar chart per grouping (namespace, node, kind, phase), each bar a link
// to the workload list filtered to that group. The chart is inline SVG.

import { gql } from "./api.js";
import { clear, gpus, h, s } from "./dom.js";
import { filterHref } from "./workloads.js";

const FIGURES = [["requestedBySpec", "requested by spec", "spec"],
  ["requestedByPods", "requested by pods", "pods"], ["allocated", "allocated", "alloc"]];
const GPU = "workloads gpu { requestedBySpec requestedByPods allocated }";
export const QUERY = `{
  cluster: gpuSummary(groupBy: CLUSTER) { key ${GPU} }
  namespace: gpuSummary(groupBy: NAMESPACE) { key ${GPU} }
  node: gpuSummary(groupBy: NODE) { key ${GPU} }
  kind: gpuSummary(groupBy: KIND) { key ${GPU} }
  phase: gpuSummary(groupBy: PHASE) { key ${GPU} }
}`;
const GROUPS = [["namespace", "By namespace"], ["node", "By node"], ["kind", "By kind"], ["phase", "By phase"]];
const BAR = 11;         // px per figure bar
const ROW = BAR * 3 + 10;
const LABEL = 250;      // px for the group name
const WIDTH = 760;

// "JobSet.jobset.x-k8s.io" reads "JobSet · jobset.x-k8s.io"; long names end with an ellipsis
function shortKey(group, key) {
  const text = group === "kind" ? key.replace(".", " · ") : key;
  return text.length > 36 ? `${text.slice(0, 35)}…` : text;
}

function chart(group, buckets) {
  const top = Math.max(1, ...buckets.flatMap((b) => FIGURES.map(([f]) => b.gpu[f])));
  const scale = (WIDTH - LABEL - 60) / top;
  const svg = s("svg", { class: "chart", width: WIDTH, height: buckets.length * ROW + 4, role: "list",
    "aria-label": `GPUs by ${group}`, viewBox: `0 0 ${WIDTH} ${buckets.length * ROW + 4}` });
  buckets.forEach((b, i) => {
    const y = i * ROW + 2;
    const title = `${b.key}: ${FIGURES.map(([f, label]) => `${gpus(b.gpu[f])} ${label}`).join(", ")}`
      + ` (${b.workloads} workloads)`;
    // pods bound to no node have no node to filter on: that bar is not a link
    const linked = !(group === "node" && b.key.startsWith("<"));
    const link = s(linked ? "a" : "g", { ...(linked ? { href: filterHref({ [group]: b.key }) } : {}), role: "listitem",
      "aria-label": title, "data-key": b.key }, s("title", {}, title),
    s("rect", { x: 0, y, width: WIDTH, height: ROW - 4, class: i % 2 ? "hit odd" : "hit" }),
    s("text", { x: LABEL - 8, y: y + ROW / 2, "text-anchor": "end" }, shortKey(group, b.key)));
    FIGURES.forEach(([f, , colour], j) => {
      const value = b.gpu[f];
      link.append(s("rect", { x: LABEL, y: y + 2 + j * BAR, width: Math.max(value * scale, value ? 1 : 0),
        height: BAR - 1, class: `bar-${colour}` }));
      link.append(s("text", { x: LABEL + value * scale + 4, y: y + (j + 1) * BAR, "font-size": "10" }, gpus(value)));
    });
    svg.append(link);
  });
  return svg;
}

function legend() {
  return h("p", { class: "legend" }, FIGURES.map(([, label, colour]) =>
    h("span", {}, h("span", { class: `swatch bar-${colour}` }), label)));
}

export async function render(main) {
  const data = await gql(QUERY);
  const total = (f) => data.cluster.reduce((sum, b) => sum + b.gpu[f], 0);
  const workloads = data.cluster.reduce((sum, b) => sum + b.workloads, 0);
  const tile = (label, value, id) => h("div", { class: "tile", id }, h("span", { class: "tile-label" }, label),
    h("span", { class: "tile-value" }, value));
  clear(main, h("h1", {}, "GPUs"),
    h("div", { class: "tiles" }, tile("Workloads", String(workloads), "gpu-workloads"),
      FIGURES.map(([f, label]) => tile(`GPUs ${label}`, gpus(total(f)), `gpu-total-${f}`))),
    legend(),
    h("p", { class: "muted" }, "Select a bar to list its workloads. By node counts pods by the node they are bound "
      + "to (its spec figure is 0: a spec names no node)."),
    GROUPS.map(([group, title]) => h("section", { id: `by-${group}` }, h("h2", {}, title),
      data[group].length ? chart(group, data[group]) : h("p", { class: "muted" }, "Nothing to show."))));
}
