// Figure 8.8: the heaviest softmax weight against d_k; curves precomputed in Python.
import * as common from "./common.js";

const W = 420, H = 240, L = 48, B = 36, T = 12, R = 12;

export function peakFor(curves, index, scaled, average) {
  return curves[`${average ? "mean" : "one"}_${scaled ? "scaled" : "unscaled"}`][index];
}

function render({ model, el }) {
  common.injectStyle();
  const curves = model.get("curves");
  const dks = curves.dks;
  const root = common.figureRoot(model, "softmax-peak-fig");
  const dk = common.slider({ label: "d_k", min: 0, max: dks.length - 1, step: 1,
                             value: model.get("dk_index"), name: "dk",
                             format: (i) => String(dks[i]) });
  const scaled = common.checkbox({ label: "divide by √d_k", checked: model.get("scaled"),
                                   name: "scaled" });
  const average = common.checkbox({ label: `average of ${curves.draws} draws (else one draw)`,
                                    checked: model.get("average"), name: "average" });
  const svg = common.s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
                                "aria-label": "heaviest weight against d_k" });
  const reading = common.h("p", {});
  root.append(common.h("div", { class: "controls" }, [dk.wrap, scaled.wrap, average.wrap]), svg,
              reading);
  common.describedBy(svg, reading);
  el.append(root);

  const x = (i) => L + (i * (W - L - R)) / (dks.length - 1);
  const y = (v) => T + (1 - v) * (H - T - B);

  function draw() {
    const i = model.get("dk_index"), sc = model.get("scaled"), av = model.get("average");
    const pic = common.picture();          // the picture, drawn off the page
    common.axes(pic, { box: [L, T, W - R, H - B], grid: true, height: H, title: "d_k (log scale)",
                       yTicks: [0, 0.25, 0.5, 0.75, 1].map((v) => [y(v), v.toFixed(2)]),
                       xTicks: dks.map((d, j) => [x(j), String(d)]) });
    // the two curves of the chosen kind: unscaled (orange, dashed) and scaled (blue, solid)
    for (const [isScaled, colour, dash] of [[false, "#d55e00", "6 3"], [true, "#0072b2", ""]]) {
      const key = `${av ? "mean" : "one"}_${isScaled ? "scaled" : "unscaled"}`;
      const pts = curves[key].map((v, j) => `${x(j)},${y(v)}`).join(" ");
      pic.append(common.s("polyline", { points: pts, fill: "none", stroke: colour,
                                        "stroke-width": isScaled === sc ? 3 : 1.5,
                                        "stroke-dasharray": dash }));
    }
    const v = peakFor(curves, i, sc, av);
    pic.append(common.s("circle", { cx: x(i), cy: y(v), r: 5, fill: "#000" }));
    svg.replaceChildren(pic);
    reading.replaceChildren(
      `${av ? "Average" : "One draw"}, ${sc ? "scaled (blue, solid)" : "unscaled (orange, dashed)"}, ` +
      `d_k = ${dks[i]}: heaviest weight `,
      common.h("strong", { class: "num", "data-readout": "peak" }, common.fmt(v)),
      ` of ${curves.n_keys} keys (uniform would be ${common.fmt(1 / curves.n_keys)}).`);
  }

  common.bindControls(model, { dk_index: dk, scaled, average }, draw, ["curves"]);
}

export default { render };
