// The definition studio: a Karta (pasted, uploaded, from the catalog or a live workload's
// definition) evaluated server-side (POST /api/v1/studio/evaluate) on pasted objects or a
// live workload; "Register" goes through POST /api/v1/definitions (access control applies).

import { rest } from "./api.js";
import { chip, clear, errorBox, gpus, h } from "./dom.js";

const pretty = (value) => JSON.stringify(value, null, 2);

function field(id, label, control) {
  return h("div", { class: "field" }, h("label", { for: id }, label), control);
}

function upload(id, target) {
  return h("input", { id, type: "file", accept: ".yaml,.yml,.json", onchange: async (e) => {
    const file = e.target.files[0];
    if (file) target.value = await file.text();
  } });
}

function parseRef(text) {
  const parts = text.trim().split("/");
  if (parts.length !== 5) return null;
  const [cluster, namespace, group, kind, name] = parts;
  return { cluster: cluster === "-" ? null : cluster, namespace: namespace === "-" ? null : namespace, group, kind, name };
}

function findings(answer) {
  if (!answer.problems.length) {
    return h("div", { class: "ok-box", id: "studio-valid" }, `Valid: ${answer.definition.name} for `
      + `${answer.definition.kind} (${answer.definition.group || "core"}/${answer.definition.version}).`);
  }
  return h("div", { class: "error-box", id: "studio-findings", role: "alert" },
    h("strong", {}, `${answer.problems.length} finding(s)`),
    h("ul", {}, answer.problems.map((p) => h("li", {}, h("code", { class: "finding-path" }, p.path || "(document)"),
      ` ${p.message}`))));
}

function paths(list) {
  if (!list.length) return "";
  return h("section", {}, h("h2", {}, "Each path's output"),
    h("table", { class: "grid", id: "studio-paths" }, h("thead", {}, h("tr", {}, ["Field path", "Evaluated on", "Output"]
      .map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, list.map((p) => h("tr", { class: p.error ? "path-error" : "" },
      h("td", {}, h("code", {}, p.path), h("details", {}, h("summary", {}, "expression"), h("pre", {}, p.expression))),
      h("td", {}, p.object ? `${p.object.kind} ${p.object.name}` : h("span", { class: "muted" }, "—")),
      h("td", {}, p.error ? h("span", { class: "error" }, p.error) : h("pre", { class: "output" }, p.output)))))));
}

function tree(view) {
  if (!view) return "";
  const errors = view.errors.concat(...view.components.map((c) => c.errors || []));
  return h("section", { id: "studio-tree" }, h("h2", {}, "Resolved tree"),
    errors.length ? h("div", { class: "error-box", role: "alert" }, h("strong", {}, "Resolution problems"),
      h("ul", {}, errors.map((e) => h("li", {}, h("code", {}, e.field), ` ${e.message}`)))) : "",
    h("ul", { class: "tree" }, h("li", {}, h("span", { class: "label" }, "Workload"), " ", h("strong", {}, view.name), " ",
      chip(view.phase), ` pods ${view.replicas.ready}/${view.replicas.desired} ready · GPUs `
        + `${gpus(view.gpu.requestedBySpec)} spec · ${gpus(view.gpu.requestedByPods)} pods · ${gpus(view.gpu.allocated)} allocated`,
      h("ul", {}, view.roles.map((r) => h("li", { class: "role", "data-role": r.name },
        h("span", { class: "label" }, "Role"), " ", h("strong", { class: "role-name" }, r.name),
        ` (${r.kind || "logical"}) pods ${r.replicas.ready}/${r.replicas.desired} ready · GPUs ${gpus(r.gpu.requestedBySpec)}`
          + ` spec${r.nodes && r.nodes.length ? ` · nodes ${r.nodes.join(", ")}` : ""}`,
        r.pods.length ? h("ul", {}, r.pods.map((p) => h("li", {}, h("span", { class: "label" }, "Pod"), " ",
          h("code", {}, typeof p === "string" ? p : p.name)))) : ""))))));
}

function results(answer) {
  return [findings(answer),
    answer.note ? h("p", { class: "warn-box", id: "studio-note" }, answer.note) : "",
    answer.phase ? h("p", { id: "studio-phase" }, "Phase ", chip(answer.phase), ` · every matched phase: `
      + `${answer.phases.join(", ") || "none"}${answer.rawPhase ? ` · raw phase ${answer.rawPhase}` : ""}`) : "",
    paths(answer.paths), tree(answer.view)];
}

async function startingDefinition(params) {
  if (params.definition) return pretty((await rest(`/api/v1/definitions/${encodeURIComponent(params.definition)}`)).manifest);
  return "";
}

export async function render(main, params) {
  const list = await rest("/api/v1/definitions");
  const definition = h("textarea", { id: "studio-definition", spellcheck: "false", "aria-describedby": "definition-help" });
  const objects = h("textarea", { id: "studio-objects", spellcheck: "false",
    placeholder: "Kubernetes objects as YAML (several documents) or JSON: the root object, its children, its pods" });
  const workload = h("input", { id: "studio-workload", size: 60, value: params.workload || "",
    placeholder: "cluster/namespace/group/kind/name (group core for the core group)" });
  const root = h("input", { id: "studio-root", placeholder: "optional" });
  const out = h("div", { id: "studio-results", "aria-live": "polite" });
  const catalog = h("select", { id: "studio-catalog", onchange: async (e) => {
    if (!e.target.value) return;
    definition.value = pretty((await rest(`/api/v1/definitions/${encodeURIComponent(e.target.value)}`)).manifest);
  } }, h("option", { value: "" }, "choose…"), list.items.map((d) => h("option", { value: d.name }, `${d.name} (${d.origin})`)));
  definition.value = await startingDefinition(params);
  if (!definition.value && params.workload) {
    const ref = parseRef(params.workload);
    const found = ref && list.items.find((d) => d.kind === ref.kind && (d.group || "core") === ref.group && !d.shadowed);
    if (found) definition.value = pretty(found.manifest);
  }

  async function evaluate() {
    const ref = workload.value.trim() ? parseRef(workload.value) : null;
    if (workload.value.trim() && !ref) {
      clear(out, errorBox({ message: "The live workload must be cluster/namespace/group/kind/name." }));
      return;
    }
    const body = { definition: definition.value, ...(ref ? { workload: ref } : { objects: objects.value || [] }),
      ...(root.value.trim() ? { root: root.value.trim() } : {}) };
    clear(out, h("p", { class: "muted" }, "Evaluating…"));
    try {
      const answer = await rest("/api/v1/studio/evaluate", {}, { method: "POST",
        headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      clear(out, results(answer));
    } catch (err) {
      clear(out, errorBox(err));
    }
  }

  async function register() {
    try {
      const done = await rest("/api/v1/definitions", {}, { method: "POST",
        headers: { "content-type": "application/yaml" }, body: definition.value });
      clear(out, h("div", { class: "ok-box", id: "studio-registered" }, `Registered ${done.definition.name} `
        + `(${done.created ? "new" : "replaced"}). `, h("a", { href: `#/definitions?name=${encodeURIComponent(done.definition.name)}` },
        "See it in the definitions")));
    } catch (err) {
      clear(out, errorBox(err));
    }
  }

  clear(main, h("h1", {}, "Studio"),
    h("p", { id: "definition-help", class: "muted" }, "Write or load a Karta, give objects (or a live workload) and "
      + "evaluate: the server validates it, runs each jq path and resolves the tree with its own bounded workers. "
      + "Nothing is stored until you register."),
    h("div", { class: "columns" },
      h("section", { "aria-labelledby": "def-title" }, h("h2", { id: "def-title" }, "Definition"),
        h("div", { class: "toolbar" }, field("studio-catalog", "Start from a definition", catalog),
          field("studio-definition-file", "Upload", upload("studio-definition-file", definition))),
        h("label", { for: "studio-definition", class: "muted" }, "Karta (YAML or JSON)"), definition),
      h("section", { "aria-labelledby": "obj-title" }, h("h2", { id: "obj-title" }, "Objects"),
        h("div", { class: "toolbar" }, field("studio-workload", "A live workload (instead of objects)", workload),
          field("studio-objects-file", "Upload", upload("studio-objects-file", objects))),
        h("div", { class: "toolbar" }, field("studio-root", "Root object name (several of its kind)", root)),
        h("label", { for: "studio-objects", class: "muted" }, "Objects (YAML or JSON)"), objects)),
    h("div", { class: "toolbar" }, h("button", { id: "studio-evaluate", type: "button", onclick: evaluate }, "Evaluate"),
      h("button", { id: "studio-register", type: "button", class: "secondary", onclick: register }, "Register")),
    out);
}
