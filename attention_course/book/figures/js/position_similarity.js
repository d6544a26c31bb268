// Figure 8.12: dot product of two position codes against their gap, for three kinds of code.
import * as common from "./common.js";

const W = 380, H = 220, L = 44, B = 30, T = 10, R = 10;

// Mirrors attention_course.figures.positions.pair_similarity.
export function pairSimilarity(C, position, gap) {
  const atGap = [];
  for (let p = 0; p + gap < C.length; p++) atGap.push(C[p].reduce((s, x, j) => s + x * C[p + gap][j], 0));
  return { dot: atGap[position], min: Math.min(...atGap), max: Math.max(...atGap),
           mean: atGap.reduce((a, b) => a + b, 0) / atGap.length };
}

// The rest of the read-out: the range over every pair `gap` apart, or why there is none.
function spread(r, gap, n) {
  if (gap === n - 1) return [`, the only pair ${gap} apart.`];
  if (common.fmt(r.min) === common.fmt(r.max)) {
    return [`, as does every pair ${gap} apart: this code's product depends on the gap alone.`];
  }
  return [`; over every pair ${gap} apart it ranges from `,
          common.h("strong", { class: "num", "data-readout": "low" }, common.fmt(r.min)), " to ",
          common.h("strong", { class: "num", "data-readout": "high" }, common.fmt(r.max)), "."];
}

function render({ model, el }) {
  common.injectStyle();
  const codes = model.get("codes"), names = Object.keys(codes);
  const n = codes[names[0]].length;
  const root = common.figureRoot(model, "position-similarity-fig");
  const selectId = `course-fig-code-${Math.random().toString(36).slice(2)}`;
  const select = common.h("select", { id: selectId, "data-control": "code" },
                          names.map((c) => common.h("option", { value: c }, c)));
  const codeControl = common.h("div", { class: "control" }, [common.h("label", { for: selectId }, "code"), select]);
  const gap = common.slider({ label: "gap", min: 0, max: n - 1, step: 1, value: model.get("gap"), name: "gap" });
  const position = common.slider({ label: "first position", min: 0, max: n - 1, step: 1,
                                   value: model.get("position"), name: "position" });
  const svg = common.s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "dot product against gap" });
  const reading = common.h("p", {});
  root.append(common.h("div", { class: "controls" }, [codeControl, gap.wrap, position.wrap]), svg, reading);
  common.describedBy(svg, reading);
  el.append(root);

  function draw() {
    const name = model.get("code"), g = model.get("gap");
    const p = Math.min(model.get("position"), n - 1 - g);
    const C = codes[name];
    const stats = [...Array(n).keys()].map((k) => pairSimilarity(C, 0, k));
    const lo = Math.min(...stats.map((s) => s.min)), hi = Math.max(...stats.map((s) => s.max));
    const x = (k) => L + (k * (W - L - R)) / (n - 1);
    const y = (v) => T + ((hi - v) * (H - T - B)) / (hi - lo || 1);
    const pic = common.picture();          // the picture, drawn off the page
    pic.append(common.s("polygon", { points: stats.map((s, k) => `${x(k)},${y(s.max)}`).concat(
      [...stats].reverse().map((s, k) => `${x(n - 1 - k)},${y(s.min)}`)).join(" "), fill: "#0072b2", "fill-opacity": 0.2 }));
    pic.append(common.s("polyline", { points: stats.map((s, k) => `${x(k)},${y(s.mean)}`).join(" "),
                                      fill: "none", stroke: "#0072b2", "stroke-width": 2 }));
    const r = pairSimilarity(C, p, g);
    pic.append(common.s("circle", { cx: x(g), cy: y(r.dot), r: 5, fill: "#d55e00" }));
    for (const v of [lo, hi]) common.label(pic, L - 4, y(v) + 4, v.toFixed(1), { "text-anchor": "end", "font-size": 11 });
    common.label(pic, (W + L) / 2, H - 6, "gap between the positions (line: mean; band: range)");
    svg.replaceChildren(pic);
    reading.replaceChildren(`${name}: positions ${p} and ${p + g} have dot product `,
      common.h("strong", { class: "num", "data-readout": "dot" }, common.fmt(r.dot)), ...spread(r, g, n));
    select.value = name;
    gap.show(g);
    position.input.max = String(n - 1 - g);
    position.show(p);
  }

  select.addEventListener("change", () => { model.set("code", select.value); model.save_changes(); });
  gap.input.addEventListener("input", () => {
    const g = Number(gap.input.value);
    model.set("gap", g);
    model.set("position", Math.min(model.get("position"), n - 1 - g));
    model.save_changes();
  });
  position.input.addEventListener("input", () => { model.set("position", Number(position.input.value)); model.save_changes(); });
  for (const k of ["code", "gap", "position"]) model.on(`change:${k}`, draw);
  draw();
}

export default { render };
