// The Chapter 8 opening figure: d / n, the numbers of a fixed context per input symbol.
import * as common from "./common.js";

const W = 380, H = 170, L = 44, R = 10, T = 10, B = 30;

// Mirrors attention_course.book.figures.context_width.numbers_per_symbol (the browser test checks).
export function numbersPerSymbol(width, n) { return width / n; }

function render({ model, el }) {
  common.injectStyle();
  const maxN = model.get("max_n");
  const root = common.figureRoot(model, "context-width-fig");
  const width = common.slider({ label: "context width d", min: 4, max: 64, step: 4,
                                value: model.get("width"), name: "width" });
  const n = common.slider({ label: "input length n", min: 1, max: maxN, step: 1,
                            value: model.get("n"), name: "n" });
  const svg = common.s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
                                "aria-label": "numbers per symbol against input length, log scale" });
  const reading = common.h("p", {});
  root.append(common.h("div", { class: "controls" }, [width.wrap, n.wrap]), svg, reading);
  common.describedBy(svg, reading);
  el.append(root);

  const x = (v) => L + (W - L - R) * (v - 1) / (maxN - 1);
  const y = (v) => T + (H - T - B) * (1 - Math.log2(v / (4 / maxN)) / Math.log2(64 / (4 / maxN)));

  function draw() {
    const d = model.get("width"), len = model.get("n");
    const ratio = numbersPerSymbol(d, len);
    const pic = common.picture();          // the picture, drawn off the page
    common.axes(pic, { box: [L, T, W - R, H - B], size: 11, height: H, title: "input length n",
                       yTicks: [1, 8, 64].map((v) => [y(v), String(v)]),
                       xTicks: [1, 16, 32, 48, 64].map((v) => [x(v), String(v)]) });
    let path = "";
    for (let k = 1; k <= maxN; k++) path += `${k === 1 ? "M" : "L"}${x(k).toFixed(1)},${y(d / k).toFixed(1)}`;
    pic.append(common.s("path", { d: path, fill: "none", stroke: "#0072b2", "stroke-width": 2 }),
               common.s("circle", { cx: x(len), cy: y(ratio), r: 5, fill: "#e69f00" }));
    svg.replaceChildren(pic);
    reading.replaceChildren("One context of ", common.h("strong", { class: "num" }, String(d)),
      " numbers for ", common.h("strong", { class: "num" }, String(len)),
      ` input symbol${len > 1 ? "s" : ""}: `,
      common.h("strong", { class: "num", "data-readout": "per-symbol" }, common.fmt(ratio, 2)),
      " numbers per symbol.");
  }

  common.bindControls(model, { width, n }, draw);
}

export default { render };
