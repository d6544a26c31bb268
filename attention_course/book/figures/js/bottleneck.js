// Figure 8.1: step a recurrent encoder-decoder through reading digits and writing them back.
import * as common from "./common.js";

const W = 380, H = 200, PAD = 10;
const BLUE = "#0072b2", TEAL = "#009e73", GOLD = "#e69f00", GREY = "#ddd";

// Mirrors attention_course.figures.bottleneck.bottleneck_steps (the browser test compares them).
export function bottleneckSteps(digits, n, width) {
  const d = digits.slice(0, n);
  const common_ = { per_symbol: width / n, width, n };
  const steps = [];
  for (let i = 1; i <= n; i++) {
    const prev = i === 1 ? "0" : `h${i - 1}`;
    steps.push({ phase: "read", text: `h${i} = f(${prev}, ${d[i - 1]})`, states: i, written: "",
                 crossing: 0, ...common_ });
  }
  steps.push({ phase: "cross", text: `c = h${n}: ${width} numbers cross to the decoder`, states: n,
               written: "", crossing: width, ...common_ });
  for (let t = 1; t <= n; t++) {
    const prev = t === 1 ? "<sos>" : d[t - 2];
    steps.push({ phase: "write", text: `s${t} = g(s${t - 1}, ${prev}, c) -> ${d[t - 1]}`, states: n,
                 written: d.slice(0, t), crossing: width, ...common_ });
  }
  return steps;
}

function render({ model, el }) {
  common.injectStyle();
  const digits = model.get("digits");
  const root = common.figureRoot(model, "bottleneck-fig");
  const n = common.slider({ label: "input length n", min: 1, max: digits.length, step: 1,
                            value: model.get("n"), name: "n" });
  const width = common.slider({ label: "context width d", min: 1, max: 64, step: 1,
                                value: model.get("width"), name: "width" });
  const step = common.slider({ label: "step", min: 0, max: 2 * model.get("n"), step: 1,
                               value: model.get("step"), name: "step" });
  const svg = common.s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
                                "aria-label": "encoder states on top, decoder states below" });
  const reading = common.h("div", {});
  root.append(common.h("div", { class: "controls" }, [n.wrap, width.wrap, step.wrap]), svg, reading);
  common.describedBy(svg, reading);
  el.append(root);

  function draw() {
    const len = model.get("n"), d = model.get("width");
    const steps = bottleneckSteps(digits, len, d);
    const k = Math.min(model.get("step"), steps.length - 1);
    const now = steps[k];
    const cell = Math.min(28, (W - 2 * PAD) / len);
    const boxH = 12 + 36 * Math.min(1, d / 64);              // taller box: wider state
    const pic = common.picture();          // the picture, drawn off the page
    const text = (x, y, str, attrs = {}) => common.label(pic, x, y, str, attrs);
    text(PAD, 14, "encoder", { "text-anchor": "start", fill: BLUE });
    text(W - PAD, 124, "decoder", { "text-anchor": "end", fill: common.ink(TEAL) });   // clear of the crossing
    for (let i = 0; i < len; i++) {
      const x = PAD + i * cell;
      const exists = i < now.states;
      const carried = i === len - 1 && now.phase !== "read";
      pic.append(common.s("rect", { x: x + 1, y: 22, width: cell - 2, height: boxH, rx: 2,
                                    fill: carried ? GOLD : exists ? BLUE : GREY }));
      text(x + cell / 2, 22 + boxH + 13, digits[i]);
      const written = i < now.written.length;
      pic.append(common.s("rect", { x: x + 1, y: 132, width: cell - 2, height: boxH, rx: 2,
                                    fill: written ? TEAL : GREY }));
      text(x + cell / 2, 132 + boxH + 13, written ? now.written[i] : "");
    }
    if (now.phase !== "read") {
      const x = PAD + (len - 0.5) * cell;
      // the crossing is drawn as wide as the context: d numbers, whatever n is
      pic.append(common.s("line", { x1: x, y1: 22 + boxH, x2: PAD + cell / 2, y2: 130,
                                    stroke: GOLD, "stroke-width": 1 + 9 * d / 64,
                                    "data-readout": "crossing-line" }));
      text((x + PAD + cell / 2) / 2 + 14, (22 + boxH + 130) / 2, `c: ${d} numbers`,
           { fill: "#8a5a00", "text-anchor": "start" });
    }
    svg.replaceChildren(pic);
    reading.replaceChildren(
      common.h("p", {}, ["Step ", common.h("span", { class: "num" }, `${k + 1} of ${steps.length}`),
                         " (", common.h("span", { "data-readout": "phase" }, now.phase), "): ",
                         common.h("code", { "data-readout": "operation" }, now.text)]),
      common.h("p", {}, ["Numbers the decoder has from the input: ",
                         common.h("strong", { class: "num", "data-readout": "crossing" }, String(now.crossing)),
                         ` — one state, for ${len} digit${len > 1 ? "s" : ""}: `,
                         common.h("strong", { class: "num", "data-readout": "per-symbol" }, common.fmt(now.per_symbol, 2)),
                         " numbers per digit."]));
    n.show(len);
    width.show(d);
    step.input.max = String(steps.length - 1);
    step.show(k);
  }

  const set = (name, value) => { model.set(name, value); model.save_changes(); };
  n.input.addEventListener("input", () => {
    const len = Number(n.input.value);
    model.set("n", len);
    model.set("step", Math.min(model.get("step"), 2 * len));
    model.save_changes();
  });
  width.input.addEventListener("input", () => set("width", Number(width.input.value)));
  step.input.addEventListener("input", () => set("step", Number(step.input.value)));
  for (const name of ["n", "width", "step"]) model.on(`change:${name}`, draw);
  draw();
}

export default { render };
