import { clear, h } from "./dom.js";

export async function render(main) {
  clear(main, h("h1", {}, "studio"), h("p", {}, "Coming soon."));
}
