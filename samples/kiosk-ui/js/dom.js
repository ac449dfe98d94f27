// Building the page. Every text goes in through textContent: a transcript holding
// `<script>` or `<img onerror=…>` shows those characters and runs nothing. Nothing in the
// UI assigns innerHTML.

/**
 * An element: `el("button", { class: "big", text: "Go", data: { action: "go" }, on: { click } }, children)`.
 * Children may be nodes, strings (as text) or null (skipped).
 */
export function el(tag, options = {}, children = []) {
  const node = document.createElement(tag);
  if (options.class) node.className = options.class;
  if (options.text !== undefined && options.text !== null) node.textContent = String(options.text);
  if (options.id) node.id = options.id;
  for (const [name, value] of Object.entries(options.attrs ?? {})) {
    if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const [name, value] of Object.entries(options.data ?? {})) node.dataset[name] = String(value);
  for (const [name, handler] of Object.entries(options.on ?? {})) node.addEventListener(name, handler);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/** Replaces everything in `parent` with `children`. */
export function replace(parent, ...children) {
  parent.replaceChildren(...children.filter((child) => child !== null && child !== undefined));
}
