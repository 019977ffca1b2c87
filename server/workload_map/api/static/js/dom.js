// Tiny DOM helpers: h() builds elements (text children are escaped by construction).

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

const SVG = "http://www.w3.org/2000/svg";
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

export function gpus(n) {
  if (n === null || n === undefined) return "?";
  return Number.isInteger(n) ? String(n) : n.toFixed(2).replace(/0+$/, "").replace(/\.$/, "");
}

export function age(created) {
  if (!created) return "";
  const seconds = Math.max(0, (Date.now() - Date.parse(created)) / 1000);
  if (seconds < 120) return `${Math.floor(seconds)}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

export function chip(phase) {
  const name = String(phase || "Undefined");
  return h("span", { class: `chip phase-${name.toLowerCase()}` }, name.charAt(0) + name.slice(1).toLowerCase());
}

export function errorBox(err) {
  const details = (err && err.details) || [];
  return h("div", { class: "error-box", role: "alert" },
    h("strong", {}, err && err.code ? `${err.code}: ` : "Error: "), (err && err.message) || String(err),
    details.length ? h("ul", {}, details.map((d) => h("li", {}, d.path ? h("code", {}, d.path) : "", d.path ? " " : "",
      d.message || JSON.stringify(d)))) : "");
}
