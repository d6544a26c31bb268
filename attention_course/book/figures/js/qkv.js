// Figure 8.7: one query, 2-D keys drawn as arrows, 3-D values drawn as colours.
import * as common from "./common.js";

export function attend(angleDeg, length, scaled, keys, values) {
  const t = (angleDeg * Math.PI) / 180;
  const q = [length * Math.cos(t), length * Math.sin(t)];
  const scale = scaled ? 1 / Math.sqrt(q.length) : 1;
  const scores = keys.map((k) => (k[0] * q[0] + k[1] * q[1]) * scale);
  const weights = common.softmax(scores);
  const output = values[0].map((_, c) => weights.reduce((acc, w, i) => acc + w * values[i][c], 0));
  return { q, scores, weights, output };
}

function arrow(svg, x, y, color, width, label) {
  const R = 40; // pixels per unit; origin at the centre of a 340 x 340 box
  const X = 170 + R * x, Y = 170 - R * y;
  svg.append(common.s("line", { x1: 170, y1: 170, x2: X, y2: Y, stroke: color,
                                 "stroke-width": width, "marker-end": "url(#qkv-head)" }));
  const text = common.s("text", { x: X + (x >= 0 ? 6 : -26), y: Y + (y >= 0 ? -6 : 16),
                                  "font-size": 14 });
  text.textContent = label;
  svg.append(text);
}

function render({ model, el }) {
  common.injectStyle();
  const root = common.figureRoot(model, "qkv-fig");
  const angle = common.slider({ label: "query angle", min: 0, max: 359, step: 1,
                                value: model.get("angle"), name: "angle", format: (x) => `${x}°` });
  const length = common.slider({ label: "query length", min: 0.1, max: 4, step: 0.1,
                                 value: model.get("length"), name: "length",
                                 format: (x) => common.fmt(x, 1) });
  const scaled = common.checkbox({ label: "divide scores by √d_k", checked: model.get("scaled"),
                                   name: "scaled" });
  const svg = common.s("svg", { viewBox: "0 0 340 340", role: "img",
                                "aria-label": "query and key arrows" });
  const table = common.h("table", { "aria-label": "scores and weights" });
  const result = common.h("p", { "data-readout": "output" });
  const summary = common.h("p", { class: "course-sr-only" });
  root.append(common.h("div", { class: "controls" }, [angle.wrap, length.wrap, scaled.wrap]),
              svg, summary, table, result);
  common.describedBy(svg, summary);
  el.append(root);

  function draw() {
    const keys = model.get("key_vectors"), values = model.get("value_colours");
    const r = attend(model.get("angle"), model.get("length"), model.get("scaled"), keys, values);
    const pic = common.picture();          // the picture, drawn off the page
    const defs = common.s("defs");
    const marker = common.s("marker", { id: "qkv-head", viewBox: "0 0 10 10", refX: 8, refY: 5,
                                        markerWidth: 5, markerHeight: 5, orient: "auto" });
    marker.append(common.s("path", { d: "M0,0 L10,5 L0,10 z", fill: "context-stroke" }));
    defs.append(marker);
    pic.append(defs);
    pic.append(common.s("circle", { cx: 170, cy: 170, r: 2, fill: "#333" }));
    keys.forEach((k, i) => arrow(pic, k[0], k[1], common.rgb(values[i]), 3, `k${i + 1}`));
    arrow(pic, r.q[0], r.q[1], "#000", 2, "q");
    svg.replaceChildren(pic);
    table.replaceChildren(common.h("tr", {}, ["key", "value (RGB)", "score", "weight"]
      .map((t) => common.h("th", {}, t))));
    r.weights.forEach((w, i) => {
      const v = values[i];
      table.append(common.h("tr", {}, [
        common.h("td", {}, `k${i + 1}`),
        common.h("td", {}, [common.h("span", { class: "swatch", style: `background:${common.rgb(v)}` }),
                            v.map((c) => common.fmt(c, 2)).join(", ")]),
        common.h("td", { class: "num", "data-readout": `score-${i}` }, common.fmt(r.scores[i])),
        common.h("td", { class: "num", "data-readout": `weight-${i}` }, common.fmt(w)),
      ]));
    });
    summary.textContent = `Query at ${model.get("angle")}°, length ${common.fmt(model.get("length"), 1)}`
      + `${model.get("scaled") ? ", scores divided by √d_k" : ", scores not scaled"}. `
      + r.weights.map((w, i) => `k${i + 1}: score ${common.fmt(r.scores[i])}, weight ${common.fmt(w)}`).join("; ")
      + `. Output colour ${r.output.map((c) => common.fmt(c)).join(", ")}.`;
    result.replaceChildren(common.h("span", { class: "swatch", style: `background:${common.rgb(r.output)}` }),
                           "output colour: ",
                           common.h("span", { class: "num", "data-readout": "output-rgb" },
                                    r.output.map((c) => common.fmt(c)).join(", ")));
  }

  common.bindControls(model, { angle, length, scaled }, draw, ["key_vectors", "value_colours"]);
}

export default { render };
