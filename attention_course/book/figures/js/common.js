// Shared helpers of the course's figures: DOM and SVG builders, labelled controls, softmax.
// Kept dependency-free; each figure module is appended to this file to make one ES module.
const SVG_NS = "http://www.w3.org/2000/svg";
const STYLE_ID = "course-fig-style";
// ids stay unique on a page with several figures (each bundles its own copy of this file)
let uid = 0;
const UID = Math.random().toString(36).slice(2, 8);
const COURSE_CSS = `
.course-fig { font: 14px/1.4 system-ui, sans-serif; max-width: 560px; width: 100%;
  box-sizing: border-box; padding: 8px; border: 1px solid #ccc; border-radius: 6px; }
.course-fig .course-fig-title { margin: 0 0 4px; font-weight: 600; }
.course-fig svg { width: 100%; max-width: 380px; height: auto; display: block; }
.course-fig .controls { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 6px 0; }
.course-fig .control { display: flex; align-items: center; gap: 6px; }
.course-fig input[type=range] { width: 150px; }
.course-fig input:focus-visible { outline: 3px solid #0072b2; outline-offset: 2px; }
.course-fig output, .course-fig .num { font-variant-numeric: tabular-nums; }
.course-fig table { border-collapse: collapse; margin-top: 4px; }
.course-fig td, .course-fig th { padding: 1px 8px; text-align: right; }
.course-fig .swatch { display: inline-block; width: 1.1em; height: 1.1em; vertical-align: middle;
  border: 1px solid #333; margin-right: 4px; }
`;

export function injectStyle() {
  if (!document.getElementById(STYLE_ID)) {
    const style = document.createElement("style");
    style.id = STYLE_ID;
    style.textContent = COURSE_CSS;
    document.head.appendChild(style);
  }
}

// The figure's frame: its number and title shown above it (the caption a reader sees and the
// name assistive technology reads), then whatever the figure appends.
export function figureRoot(model, name) {
  const id = `course-fig-title-${UID}-${++uid}`;
  const root = h("div", { class: `course-fig ${name}`, role: "figure", "aria-labelledby": id });
  root.append(h("p", { class: "course-fig-title", id }, model.get("title")));
  return root;
}

export function h(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of [].concat(children)) node.append(c);
  return node;
}

export function s(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

export function slider({ label, min, max, step, value, name, format = (x) => x }) {
  const id = `course-fig-${name}-${UID}-${++uid}`;
  const input = h("input", { type: "range", id, min, max, step, "data-control": name });
  input.value = value;
  const out = h("output", { for: id, "data-readout": `${name}-value` }, format(Number(value)));
  const wrap = h("div", { class: "control" }, [h("label", { for: id }, label), input, out]);
  return { wrap, input, out };
}

export function checkbox({ label, checked, name }) {
  const id = `course-fig-${name}-${UID}-${++uid}`;
  const input = h("input", { type: "checkbox", id, "data-control": name });
  input.checked = checked;
  return { wrap: h("div", { class: "control" }, [input, h("label", { for: id }, label)]), input };
}

export function softmax(xs) {
  const m = Math.max(...xs);
  const e = xs.map((x) => Math.exp(x - m));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / total);
}

export const fmt = (x, digits = 3) => Number(x).toFixed(digits);
export const rgb = (v) => `rgb(${v.map((c) => Math.round(255 * Math.min(1, Math.max(0, c)))).join(",")})`;
