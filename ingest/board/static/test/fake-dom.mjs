// A minimal document for node tests of dom.js: elements with attributes, dataset, text and
// children, getElementById and querySelector by class; html() serialises a node.

const kebab = (k) => k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());

class Text {
  constructor(text) {
    this.text = String(text);
  }
}

class Element {
  constructor(doc, tag, ns = null) {
    this.doc = doc;
    this.tagName = tag;
    this.namespaceURI = ns;
    this.attributes = new Map();
    this.childNodes = [];
    this.dataset = new Proxy(
      {},
      {
        get: (_, k) => this.attributes.get("data-" + kebab(k)),
        set: (_, k, v) => {
          this.attributes.set("data-" + kebab(k), String(v));
          return true;
        },
      },
    );
  }

  setAttribute(k, v) {
    this.attributes.set(k, String(v));
  }

  getAttribute(k) {
    return this.attributes.has(k) ? this.attributes.get(k) : null;
  }

  get id() {
    return this.getAttribute("id");
  }

  get textContent() {
    return this.childNodes.map((c) => (c instanceof Text ? c.text : c.textContent)).join("");
  }

  set textContent(v) {
    this.childNodes = v === "" || v === null ? [] : [new Text(v)];
  }

  get firstChild() {
    return this.childNodes[0] ?? null;
  }

  appendChild(child) {
    this.childNodes.push(child);
    return child;
  }

  prepend(child) {
    this.childNodes.unshift(child);
  }

  replaceChildren(...children) {
    this.childNodes = [...children];
  }

  *descendants() {
    for (const c of this.childNodes) {
      if (c instanceof Element) {
        yield c;
        yield* c.descendants();
      }
    }
  }

  // ".a.b" (every class) or "tag": enough for dom.js.
  querySelector(selector) {
    return this.querySelectorAll(selector)[0] ?? null;
  }

  querySelectorAll(selector) {
    const match = selector.startsWith(".")
      ? (el) => {
          const have = (el.getAttribute("class") || "").split(/\s+/);
          return selector.slice(1).split(".").every((c) => have.includes(c));
        }
      : (el) => el.tagName === selector;
    return [...this.descendants()].filter(match);
  }
}

export class FakeDocument {
  constructor() {
    this.body = new Element(this, "body");
  }

  createElement(tag) {
    return new Element(this, tag);
  }

  createElementNS(ns, tag) {
    return new Element(this, tag, ns);
  }

  createTextNode(text) {
    return new Text(text);
  }

  getElementById(id) {
    return [...this.body.descendants()].find((el) => el.id === id) ?? null;
  }
}

// A board section as index.html has it: <section id class="panel"><div class="body">.
export function section(doc, id) {
  const el = doc.createElement("section");
  el.setAttribute("id", id);
  el.setAttribute("class", "panel");
  const body = doc.createElement("div");
  body.setAttribute("class", "body");
  el.appendChild(body);
  doc.body.appendChild(el);
  return el;
}

const escape = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");

export function html(node) {
  if (node instanceof Text) return escape(node.text);
  const attrs = [...node.attributes].map(([k, v]) => ` ${k}="${escape(v)}"`).join("");
  const ns = node.namespaceURI ? "svg:" : "";
  return `<${ns}${node.tagName}${attrs}>${node.childNodes.map(html).join("")}</${ns}${node.tagName}>`;
}
