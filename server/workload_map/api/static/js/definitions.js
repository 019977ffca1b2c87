import { clear, h } from "./dom.js";

export async function render(main) {
  clear(main, h("h1", {}, "definitions"), h("p", {}, "Coming soon."));
}
