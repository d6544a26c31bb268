// Interaction patterns of sparse attention; mirrors attention_course.long_attention.pattern.
import * as common from "./common.js";

const SIDE = 300;
// which controls each pattern reads: the others are switched off, and say so, while it is shown
export const USES = {
  full: [], causal: [], local: ["window"], dilated: ["window", "dilation"],
  global: ["window", "globals_"], bigbird: ["window", "globals_"],
};

export function pattern(kind, n, window, dilation, globals, links) {
  const m = [];
  for (let i = 0; i < n; i++) {
    const row = [];
    for (let j = 0; j < n; j++) {
      const gap = Math.abs(i - j);
      let ok;
      if (kind === "full") ok = true;
      else if (kind === "causal") ok = j <= i;
      else if (kind === "dilated") ok = gap <= window * dilation && gap % dilation === 0;
      else {
        ok = gap <= window;
        if (kind === "global" || kind === "bigbird") ok = ok || i < globals || j < globals;
      }
      row.push(ok);
    }
    if (kind === "bigbird") for (const j of links[i]) row[j] = true;
    m.push(row);
  }
  return m;
}

function render({ model, el }) {
  common.injectStyle();
  const root = common.figureRoot(model, "patterns-fig");
  const selectId = `course-fig-kind-${Math.random().toString(36).slice(2)}`;
  const select = common.h("select", { id: selectId, "data-control": "kind" },
                          model.get("kinds").map((k) => common.h("option", { value: k }, k)));
  const kind = common.h("div", { class: "control" }, [common.h("label", { for: selectId }, "pattern"), select]);
  const n = common.slider({ label: "tokens N", min: 8, max: 32, step: 1, value: model.get("n"), name: "n" });
  const window_ = common.slider({ label: "band half-width", min: 0, max: 6, step: 1, value: model.get("window"), name: "window" });
  const dilation = common.slider({ label: "dilation", min: 1, max: 5, step: 1, value: model.get("dilation"), name: "dilation" });
  const globals = common.slider({ label: "global tokens", min: 0, max: 4, step: 1, value: model.get("globals_"), name: "globals" });
  const sized = { window: window_, dilation, globals_: globals };
  for (const control of Object.values(sized)) {
    control.note = common.h("span", { class: "control-note", id: `${control.input.id}-note` });
    control.input.setAttribute("aria-describedby", control.note.id);
    control.wrap.append(control.note);
  }
  const svg = common.s("svg", { viewBox: `0 0 ${SIDE} ${SIDE}`, role: "img", "aria-label": "rows: queries, columns: keys" });
  const reading = common.h("p", {});
  root.append(common.h("div", { class: "controls" }, [kind, n.wrap, window_.wrap, dilation.wrap, globals.wrap]), svg, reading);
  common.describedBy(svg, reading);
  el.append(root);

  function draw() {
    const N = model.get("n"), k = model.get("kind");
    const m = pattern(k, N, model.get("window"), model.get("dilation"), model.get("globals_"), model.get("links")[String(N)]);
    for (const [name, control] of Object.entries(sized)) {
      const used = USES[k].includes(name);
      control.input.disabled = !used;
      control.note.textContent = used ? "" : `(not used by the ${k} pattern)`;
    }
    const cell = SIDE / N;
    const pic = common.picture();          // the picture, drawn off the page
    let pairs = 0;
    m.forEach((row, i) => row.forEach((ok, j) => {
      if (ok) pairs++;
      pic.append(common.s("rect", { x: j * cell, y: i * cell, width: cell - 0.5, height: cell - 0.5, fill: ok ? "#333" : "#eee" }));
    }));
    svg.replaceChildren(pic);
    reading.replaceChildren(`${k}: `, common.h("strong", { class: "num", "data-readout": "pairs" }, String(pairs)),
      ` of ${N * N} pairs may interact (${((100 * pairs) / (N * N)).toFixed(0)}%).`);
  }

  common.bindControls(model, { kind: select, n, window: window_, dilation, globals_: globals }, draw);
}

export default { render };
