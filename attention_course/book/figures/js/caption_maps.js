// Figure 8.5: per-word attention maps of the course captioner over its 6 x 6 feature grid.
import * as common from "./common.js";

const SIDE = 240;

// Mirrors attention_course.figures.caption_maps.map_readouts (ties broken by the lower cell id).
export function mapReadouts(weights) {
  const order = weights.map((w, i) => i).sort((a, b) => weights[b] - weights[a] || a - b);
  let total = 0, count = 0;
  while (count < order.length && total < 0.5 - 1e-12) total += weights[order[count++]];
  const cells = order.slice(0, count);
  return { peak: Math.max(...weights), halfCells: count, cells, region: mapRegion(weights, cells) };
}

// Mirrors attention_course.figures.caption_maps.map_region: where the weight of `cells` is centred.
export function mapRegion(weights, cells) {
  const grid = Math.round(Math.sqrt(weights.length));
  const total = cells.reduce((sum, k) => sum + weights[k], 0);
  let row = 0, column = 0;
  for (const k of cells) {
    row += (weights[k] / total) * Math.floor(k / grid);
    column += (weights[k] / total) * (k % grid);
  }
  const third = (mean) => Math.min(2, Math.floor((3 * (mean + 0.5)) / grid));
  const where = [["top", "middle", "bottom"][third(row)], ["left", "centre", "right"][third(column)]];
  return where.join(" ") === "middle centre" ? "centre" : where.join(" ");
}

// The outlined cells in words, heaviest first: "row 2, column 5; row 3, column 5 and 2 more".
const LISTED = 4;
function cellsInWords(cells, grid) {
  const named = cells.slice(0, LISTED).map((k) => `row ${Math.floor(k / grid) + 1}, column ${(k % grid) + 1}`);
  const more = cells.length - named.length;
  return named.join("; ") + (more > 0 ? ` and ${more} more` : "");
}

function render({ model, el }) {
  common.injectStyle();
  const words = model.get("words"), grid = model.get("grid");
  const root = common.figureRoot(model, "caption-maps-fig");
  const word = common.slider({ label: "word", min: 0, max: words.length - 1, step: 1,
                               value: model.get("word_index"), name: "word",
                               format: (i) => words[i] });
  const relative = common.checkbox({ label: "shade relative to this word's peak",
                                     checked: model.get("relative"), name: "relative" });
  const caption = common.h("p", { "aria-label": "the caption" });
  const svg = common.s("svg", { viewBox: `0 0 ${SIDE} ${SIDE}`, role: "img",
                                "aria-label": "the image with the word's attention over the grid" });
  const reading = common.h("p", {});
  root.append(common.h("div", { class: "controls" }, [word.wrap, relative.wrap]), caption, svg, reading);
  common.describedBy(svg, reading);
  el.append(root);

  function draw() {
    const i = model.get("word_index"), rel = model.get("relative");
    const w = model.get("weights")[i];
    const r = mapReadouts(w);
    const top = rel ? r.peak : 1;
    const cell = SIDE / grid;
    const pic = common.picture();          // the picture, drawn off the page
    pic.append(common.s("image", { href: model.get("image"), x: 0, y: 0, width: SIDE,
                                   height: SIDE, preserveAspectRatio: "none",
                                   style: "image-rendering: pixelated" }));
    w.forEach((v, k) => {
      const x = (k % grid) * cell, y = Math.floor(k / grid) * cell;
      // dark veil where the weight is low: bright cells are where attention went
      pic.append(common.s("rect", { x, y, width: cell, height: cell, fill: "#000",
                                    "fill-opacity": (0.85 * (1 - v / top)).toFixed(3) }));
      if (r.cells.includes(k)) {
        pic.append(common.s("rect", { x: x + 1, y: y + 1, width: cell - 2, height: cell - 2,
                                      fill: "none", stroke: "#fff", "stroke-width": 2,
                                      "stroke-dasharray": "4 2" }));
      }
    });
    svg.replaceChildren(pic);
    caption.replaceChildren(...words.flatMap((wd, k) =>
      [k === i ? common.h("strong", { "data-readout": "word" }, wd) : wd, " "]));
    reading.replaceChildren(
      "Peak weight ", common.h("strong", { class: "num", "data-readout": "peak" }, common.fmt(r.peak)),
      "; cells holding half the attention (dashed): ",
      common.h("strong", { class: "num", "data-readout": "half-cells" }, String(r.halfCells)),
      ` of ${grid * grid}. Shading: ${rel ? "relative to this word's peak" : "absolute, 0 to 1"}. `,
      `The dashed cells of "${words[i]}" are centred on the `,
      common.h("strong", { "data-readout": "region" }, r.region),
      ` of the image; heaviest first (rows from the top, columns from the left): `,
      common.h("span", { "data-readout": "cells" }, cellsInWords(r.cells, grid)), ".");
  }

  common.bindControls(model, { word_index: word, relative }, draw, ["weights"]);
}

export default { render };
