// Shared helpers of the course's figures: DOM and SVG builders, labelled controls, softmax.
// Kept dependency-free; each figure module is appended to this file to make one ES module.
const SVG_NS = "http://www.w3.org/2000/svg";
const STYLE_ID = "course-fig-style";
// ids stay unique on a page with several figures (each bundles its own copy of this file)
let uid = 0;
const UID = Math.random().toString(36).slice(2, 8);
const COURSE_CSS = `
.course-fig { font: 14px/1.4 system-ui, sans-serif; max-width: 560px; width: 100%;
  box-sizing: border-box; padding: 8px; border: 1px solid #ccc; border-radius: 6px;
  background: #fff; color: #1a1a1a; color-scheme: light; }
.course-fig code { color: #1a1a1a; background: #f0f0f0; }
.course-fig .course-fig-title { margin: 0 0 4px; font-weight: 600; }
.course-fig svg { width: 100%; max-width: 380px; height: auto; display: block; }
.course-fig .controls { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 6px 0; }
.course-fig .control { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; }
.course-fig input[type=range] { width: 150px; }
.course-fig input:focus-visible, .course-fig .scroll:focus-visible { outline: 3px solid #0072b2;
  outline-offset: 2px; }
.course-fig .scroll { overflow-x: auto; max-width: 100%; }
.course-fig .course-sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px;
  overflow: hidden; clip: rect(0, 0, 0, 0); white-space: nowrap; border: 0; }
.course-fig { position: relative; }
.course-fig .control-note { font-size: 12px; color: #444; }
.course-fig input:disabled + output, .course-fig .control:has(input:disabled) label { color: #595959; }
.course-fig output, .course-fig .num { font-variant-numeric: tabular-nums; }
.course-fig table { border-collapse: collapse; margin-top: 4px; }
.course-fig td, .course-fig th { padding: 1px 8px; text-align: right; }
.course-fig button, .course-fig summary { font: inherit; color: #1a1a1a; }
.course-fig button { background: #f0f0f0; border: 1px solid #555; border-radius: 4px; padding: 2px 12px; }
.course-fig button:focus-visible, .course-fig summary:focus-visible, .course-fig select:focus-visible {
  outline: 3px solid #0072b2; outline-offset: 2px; }
.course-fig input[type=text] { font: inherit; border: 1px solid #555; padding: 1px 4px; }
.course-selfcheck fieldset { border: 0; margin: 0; padding: 0; min-width: 0; }
.course-selfcheck legend, .course-selfcheck .selfcheck-prompt { padding: 0; margin: 4px 0;
  font: inherit; float: none; width: auto; }
.course-selfcheck .option { display: flex; align-items: baseline; gap: 6px; margin: 4px 0; }
.course-selfcheck .selfcheck-outcome { margin: 0 0 4px; font-size: 13px; color: #444; }
.course-selfcheck .selfcheck-feedback { margin: 4px 0; min-height: 1.4em; }
.course-selfcheck .selfcheck-feedback[data-verdict=correct] strong { color: #00775a; }
.course-selfcheck .selfcheck-feedback[data-verdict=wrong] strong { color: #b34700; }
.course-selfcheck summary { cursor: pointer; }
.course-fig .swatch { display: inline-block; width: 1.1em; height: 1.1em; vertical-align: middle;
  border: 1px solid #333; margin-right: 4px; }
`;

// A figure is a light card in the book's light and dark modes alike, so one palette serves both:
// the Okabe-Ito colours for marks (at least 3:1 on white), and for text in a colour the darker
// shade of each (at least 4.5:1 on white), through `ink`.
const INK = { "#009e73": "#00775a", "#d55e00": "#b34700", "#e69f00": "#8a6100" };

export function ink(colour) {
  return INK[colour] ?? colour;
}

// sRGB relative luminance (WCAG 2.1) of [r, g, b] in 0..1.
export function luminance(rgb) {
  const lin = (c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const [r, g, b] = rgb.map(lin);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

// Black or white, whichever reads better on a background of [r, g, b] (one always reaches 4.5:1).
export function textOn(rgb) {
  const l = luminance(rgb);
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? "#000" : "#fff";
}

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

// A picture's text equivalent: `svg` (role "img", named by its aria-label) is described by the
// read-out(s) that state in words what it shows, so a screen reader reads both.
export function describedBy(svg, ...texts) {
  const ids = texts.map((t) => t.id || (t.id = `course-fig-text-${UID}-${++uid}`));
  svg.setAttribute("aria-describedby", ids.join(" "));
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

// Where a figure draws its picture: off the page, put into its <svg> with one change once drawn
// (`svg.replaceChildren(picture)`). The book's theme watches the page for icons to draw (Font
// Awesome re-reads an element each time a child is added to it), so shapes appended one by one to
// a shown <svg> cost time growing with their square: the position code of Figure 8.11, 4,000
// cells, took 3 s to redraw at each move of a slider.
export function picture() {
  return document.createDocumentFragment();
}

// A labelled range input for the model trait `name`, showing the trait's value beside it (and to
// assistive technology, as aria-valuetext) through `format`. With `values` (a list), the slider
// moves through their indices and the trait takes the value at the index.
export function slider({ label, min, max, step, value, name, format = String, values = null }) {
  const id = `course-fig-${name}-${UID}-${++uid}`;
  const range = values ? { min: 0, max: values.length - 1, step: 1 } : { min, max, step };
  const input = h("input", { type: "range", id, ...range, "data-control": name });
  const out = h("output", { for: id, "data-readout": `${name}-value` });
  const control = {
    wrap: h("div", { class: "control" }, [h("label", { for: id }, label), input, out]),
    input, out, event: "input",
    read: () => (values ? values[Number(input.value)] : Number(input.value)),
    show(v) {
      input.value = values ? values.indexOf(v) : v;
      out.textContent = format(v);
      input.setAttribute("aria-valuetext", out.textContent);
    },
  };
  control.show(value);
  return control;
}

export function checkbox({ label, checked, name }) {
  const id = `course-fig-${name}-${UID}-${++uid}`;
  const input = h("input", { type: "checkbox", id, "data-control": name });
  input.checked = checked;
  return { wrap: h("div", { class: "control" }, [input, h("label", { for: id }, label)]), input,
           event: "change", read: () => input.checked, show: (v) => { input.checked = v; } };
}

// A <select> as a control of the same kind.
function choice(select) {
  return { input: select, event: "change", read: () => select.value,
           show: (v) => { select.value = v; } };
}

// Each control (a slider, a checkbox or a <select>) sets the model trait of its key when moved;
// any change of those traits, or of the traits named in `also` (data without a control),
// redraws the figure, and then every control shows the model's value again.
export function bindControls(model, controls, draw, also = []) {
  const bound = Object.entries(controls).map(
    ([name, c]) => [name, c instanceof HTMLSelectElement ? choice(c) : c]);
  for (const [name, c] of bound) {
    c.input.addEventListener(c.event, () => { model.set(name, c.read()); model.save_changes(); });
  }
  const redraw = () => {
    draw();
    for (const [name, c] of bound) c.show(model.get(name));
  };
  for (const name of [...bound.map(([name]) => name), ...also]) model.on(`change:${name}`, redraw);
  redraw();
}

// A text label appended to `svg` at (x, y): centred, 11 units high, unless `attrs` says otherwise.
export function label(svg, x, y, text, attrs = {}) {
  const t = s("text", { x, y, "text-anchor": "middle", "font-size": 11, ...attrs });
  t.textContent = text;
  svg.append(t);
  return t;
}

// A plot's frame in `svg`: `box` = [left, top, right, bottom] of the plotting area; `yTicks` and
// `xTicks` = [[position, text], ...] in SVG units, labelled left of and below it; `grid` draws a
// light line at each y tick instead of the two axis lines; `title` names the x axis at the bottom.
export function axes(svg, { box, yTicks = [], xTicks = [], title = "", grid = false, size = 11,
                            height }) {
  const [left, top, right, bottom] = box;
  if (grid) {
    for (const [py] of yTicks) svg.append(s("line", { x1: left, x2: right, y1: py, y2: py, stroke: "#ddd" }));
  } else {
    svg.append(s("line", { x1: left, y1: bottom, x2: right, y2: bottom, stroke: "#888" }),
               s("line", { x1: left, y1: top, x2: left, y2: bottom, stroke: "#888" }));
  }
  for (const [py, text] of yTicks) label(svg, left - 5, py + 4, text, { "text-anchor": "end", "font-size": size });
  for (const [px, text] of xTicks) label(svg, px, bottom + size + 3, text, { "font-size": size });
  if (title) label(svg, (left + right) / 2, (height ?? bottom + 2 * size + 8) - 4, title, { "font-size": size + 1 });
}

export function softmax(xs) {
  const m = Math.max(...xs);
  const e = xs.map((x) => Math.exp(x - m));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / total);
}

export const fmt = (x, digits = 3) => Number(x).toFixed(digits);
export const rgb = (v) => `rgb(${v.map((c) => Math.round(255 * Math.min(1, Math.max(0, c)))).join(",")})`;
