// Figure 8.2: the alignment matrix of the attention copy model; pick a row and read it.
import * as common from "./common.js";

// 40 x 40 cells with a character label on each row and column: drawn at its own size (labels
// 11 px), in a box that scrolls sideways where the screen is narrower (a two-dimensional
// picture, which WCAG's reflow criterion exempts; the box is a Tab stop so keys can scroll it).
const CELL = 12, LABEL = 18, BAR_H = 60, FONT = 11;

// Mirrors attention_course.book.figures.alignment.alignment_readouts (ties: the first column).
export function alignmentReadouts(weights, row) {
  const peak = (r) => r.reduce((best, w, j) => (w > r[best] ? j : best), 0);
  const offsets = weights.map((r, t) => Math.abs(peak(r) - t));
  const count = (f) => offsets.filter(f).length;
  const argmax = peak(weights[row]);
  return { max: weights[row][argmax], argmax, offset: offsets[row],
           onDiagonal: count((o) => o === 0), oneOff: count((o) => o === 1), further: count((o) => o > 1) };
}

function render({ model, el }) {
  common.injectStyle();
  const inputs = model.get("inputs"), outputs = model.get("outputs");
  const T = outputs.length, N = inputs.length;
  const root = common.figureRoot(model, "alignment-fig");
  const row = common.slider({ label: "output character t", min: 0, max: T - 1, step: 1,
                              value: model.get("row"), name: "row",
                              format: (t) => `${t + 1}: ${outputs[t]}` });
  const width = LABEL + N * CELL, height = LABEL + T * CELL;
  const matrix = common.s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img",
                                   "aria-label": "the alignment matrix; the chosen row is outlined" });
  const bars = common.s("svg", { viewBox: `0 0 ${width} ${BAR_H + LABEL}`, role: "img",
                                 "aria-label": "the chosen row's weights over the input characters" });
  const reading = common.h("p", {});
  const totals = common.h("p", {});
  for (const svg of [matrix, bars]) svg.setAttribute("style", `width: ${width}px; max-width: none`);
  const scrolls = (svg, name) => common.h("div", { class: "scroll", tabindex: 0, role: "region",
                                                   "aria-label": `${name}, scrolls sideways` }, svg);
  root.append(common.h("div", { class: "controls" }, [row.wrap]), scrolls(matrix, "the alignment matrix"),
              common.h("p", {}, "The chosen row's weights over the input characters:"),
              scrolls(bars, "the chosen row's weights"), reading, totals);
  common.describedBy(matrix, reading, totals);
  common.describedBy(bars, reading);
  el.append(root);

  const text = (x, y, s, anchor = "middle") => {
    const t = common.s("text", { x, y, "font-size": FONT, "text-anchor": anchor });
    t.textContent = s;
    return t;
  };
  const weights = () => model.get("weights");
  const rects = [];
  weights().forEach((r, t) => r.forEach((w, j) => {
    const cell = common.s("rect", { x: LABEL + j * CELL, y: LABEL + t * CELL, width: CELL, height: CELL,
                                    fill: common.rgb([1 - w, 1 - w, 1 - w]) });
    cell.addEventListener("click", () => { model.set("row", t); model.save_changes(); });
    matrix.append(cell);
    rects.push(cell);
  }));
  inputs.forEach((c, j) => matrix.append(text(LABEL + (j + 0.5) * CELL, LABEL - 4, c)));
  outputs.forEach((c, t) => matrix.append(text(LABEL - 3, LABEL + (t + 0.8) * CELL, c, "end")));
  const outline = common.s("rect", { x: LABEL, width: N * CELL, height: CELL, fill: "none",
                                     stroke: "#d55e00", "stroke-width": 1.5 });
  const peakMark = common.s("rect", { width: CELL, height: CELL, fill: "none", stroke: "#0072b2",
                                      "stroke-width": 1.5 });
  matrix.append(outline, peakMark);

  function draw() {
    const t = model.get("row"), r = alignmentReadouts(weights(), t);
    outline.setAttribute("y", LABEL + t * CELL);
    peakMark.setAttribute("x", LABEL + r.argmax * CELL);
    peakMark.setAttribute("y", LABEL + t * CELL);
    bars.replaceChildren(...weights()[t].flatMap((w, j) => [
      common.s("rect", { x: LABEL + j * CELL + 1, y: BAR_H * (1 - w), width: CELL - 2, height: BAR_H * w,
                         fill: j === r.argmax ? "#0072b2" : "#999" }),
      text(LABEL + (j + 0.5) * CELL, BAR_H + FONT + 2, inputs[j]),
    ]));
    const where = r.offset === 0 ? "on the diagonal" : `${r.offset} column${r.offset > 1 ? "s" : ""} off the diagonal`;
    reading.replaceChildren(
      `Writing character ${t + 1} (${outputs[t]}): the heaviest weight, `,
      common.h("strong", { class: "num", "data-readout": "max" }, common.fmt(r.max)),
      `, is on input character `, common.h("strong", { class: "num", "data-readout": "argmax" }, String(r.argmax + 1)),
      ` (${inputs[r.argmax]}), `, common.h("span", { "data-readout": "where" }, where), ".");
    totals.replaceChildren(`Over all ${T} rows the heaviest weight is on the diagonal in `,
      common.h("strong", { class: "num", "data-readout": "on-diagonal" }, String(r.onDiagonal)),
      ", one column off in ", common.h("strong", { class: "num", "data-readout": "one-off" }, String(r.oneOff)),
      " and further off in ", common.h("strong", { class: "num", "data-readout": "further" }, String(r.further)), ".");
  }

  common.bindControls(model, { row }, draw, ["weights"]);
}

export default { render };
