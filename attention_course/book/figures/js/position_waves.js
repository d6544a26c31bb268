// Figure 8.11: the sinusoidal code of every position as an image, one pair as a wave.
import * as common from "./common.js";

const W = 380, IMG = 150, WAVE = 90, BASE = 10000;

// Mirrors attention_course.figures.positions.pair_wave.
export function pairWave(d, pair, position) {
  const omega = Math.pow(BASE, (-2 * pair) / d);
  return { omega, wavelength: (2 * Math.PI) / omega, ratio: Math.pow(BASE, 2 / d),
           sin: Math.sin(omega * position), cos: Math.cos(omega * position) };
}

const colour = (v) => (v >= 0 ? `rgb(${Math.round(255 - 180 * v)},${Math.round(255 - 150 * v)},255)`
                              : `rgb(255,${Math.round(255 + 150 * v)},${Math.round(255 + 180 * v)})`);

function render({ model, el }) {
  common.injectStyle();
  const n = model.get("n");
  const root = common.figureRoot(model, "position-waves-fig");
  const d = common.slider({ label: "width d", min: 8, max: 64, step: 8, value: model.get("d"), name: "d" });
  const pair = common.slider({ label: "pair i", min: 0, max: model.get("d") / 2 - 1, step: 1,
                               value: model.get("pair"), name: "pair" });
  const position = common.slider({ label: "position p", min: 0, max: n - 1, step: 1,
                                   value: model.get("position"), name: "position" });
  const svg = common.s("svg", { viewBox: `0 0 ${W} ${IMG + WAVE + 10}`, role: "img",
                                "aria-label": "position code image, and the chosen pair as a wave" });
  const reading = common.h("p", {});
  root.append(common.h("div", { class: "controls" }, [d.wrap, pair.wrap, position.wrap]), svg, reading);
  common.describedBy(svg, reading);
  el.append(root);

  function draw() {
    const D = model.get("d"), i = Math.min(model.get("pair"), D / 2 - 1), p = model.get("position");
    const cw = W / n, ch = IMG / D;
    const pic = common.picture();          // the picture, drawn off the page
    for (let j = 0; j < D; j++) {
      const w = Math.pow(BASE, (-2 * Math.floor(j / 2)) / D);
      for (let q = 0; q < n; q++) {
        const v = j % 2 === 0 ? Math.sin(w * q) : Math.cos(w * q);
        pic.append(common.s("rect", { x: q * cw, y: j * ch, width: cw + 0.3, height: ch + 0.3, fill: colour(v) }));
      }
    }
    pic.append(common.s("rect", { x: 0, y: 2 * i * ch, width: W, height: 2 * ch, fill: "none", stroke: "#000", "stroke-width": 1.5 }));
    pic.append(common.s("rect", { x: p * cw, y: 0, width: cw, height: IMG, fill: "none", stroke: "#000", "stroke-width": 1.5 }));
    const mid = IMG + 10 + WAVE / 2, amp = WAVE / 2 - 4;
    const wave = pairWave(D, i, p);
    const pts = [];
    for (let q = 0; q <= 4 * (n - 1); q++) pts.push(`${(q / 4) * cw + cw / 2},${mid - amp * Math.sin(wave.omega * q / 4)}`);
    pic.append(common.s("line", { x1: 0, x2: W, y1: mid, y2: mid, stroke: "#ccc" }));
    pic.append(common.s("polyline", { points: pts.join(" "), fill: "none", stroke: "#0072b2", "stroke-width": 2 }));
    pic.append(common.s("circle", { cx: p * cw + cw / 2, cy: mid - amp * wave.sin, r: 4, fill: "#d55e00" }));
    svg.replaceChildren(pic);
    reading.replaceChildren(
      `Pair ${i} (coordinates ${2 * i} and ${2 * i + 1}) turns by ω = `,
      common.h("strong", { class: "num", "data-readout": "omega" }, wave.omega.toPrecision(4)),
      " per position: one full wave every ",
      common.h("strong", { class: "num", "data-readout": "wavelength" }, wave.wavelength.toFixed(1)),
      ` positions. At p = ${p}: sin = `,
      common.h("span", { class: "num", "data-readout": "sin" }, common.fmt(wave.sin)),
      ", cos = ", common.h("span", { class: "num", "data-readout": "cos" }, common.fmt(wave.cos)),
      ". Each pair's wave is ", common.h("strong", { class: "num", "data-readout": "ratio" }, wave.ratio.toFixed(3)),
      ` times longer than the one before (10000^(2/${D})).`);
    d.show(D);
    pair.input.max = String(D / 2 - 1);
    pair.show(i);
    position.show(p);
  }

  const set = (name, value) => { model.set(name, value); model.save_changes(); };
  d.input.addEventListener("input", () => {
    const D = Number(d.input.value);
    model.set("d", D);
    model.set("pair", Math.min(model.get("pair"), D / 2 - 1));
    model.save_changes();
  });
  pair.input.addEventListener("input", () => set("pair", Number(pair.input.value)));
  position.input.addEventListener("input", () => set("position", Number(position.input.value)));
  for (const name of ["d", "pair", "position"]) model.on(`change:${name}`, draw);
  draw();
}

export default { render };
