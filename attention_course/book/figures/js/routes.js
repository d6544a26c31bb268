// Figure 8.9: steps from one position to another: recurrent chain, convolution stack, attention.
import * as common from "./common.js";

const W = 380, ROW = 70, PAD = 14;

// Mirrors attention_course.notes.routes.route_lengths.
export function routeLengths(distance, kernel) {
  return { recurrent: distance, convolution: Math.ceil(distance / (kernel - 1)), "self-attention": 1 };
}

function render({ model, el }) {
  common.injectStyle();
  const root = common.figureRoot(model, "routes-fig");
  const distance = common.slider({ label: "distance", min: 1, max: 24, step: 1,
                                   value: model.get("distance"), name: "distance" });
  const kernel = common.slider({ label: "convolution width k", min: 2, max: 9, step: 1,
                                 value: model.get("kernel"), name: "kernel" });
  const svg = common.s("svg", { viewBox: `0 0 ${W} ${3 * ROW}`, role: "img",
                                "aria-label": "three routes from the first position to the last" });
  const table = common.h("table", { "aria-label": "steps on the shortest route" });
  const summary = common.h("p", { class: "course-sr-only" });
  root.append(common.h("div", { class: "controls" }, [distance.wrap, kernel.wrap]), svg, summary, table);
  common.describedBy(svg, summary);
  el.append(root);

  function draw() {
    const dist = model.get("distance"), k = model.get("kernel");
    const steps = routeLengths(dist, k);
    const x = (i) => PAD + (i * (W - 2 * PAD)) / dist;
    const pic = common.picture();          // the picture, drawn off the page
    const kinds = [["recurrent", "#0072b2"], ["convolution", "#009e73"], ["self-attention", "#d55e00"]];
    kinds.forEach(([kind, colour], row) => {
      const y = row * ROW + 44;
      const label = common.s("text", { x: PAD, y: row * ROW + 14, "font-size": 12, fill: common.ink(colour) });
      label.textContent = `${kind}: ${steps[kind]} step${steps[kind] > 1 ? "s" : ""}`;
      pic.append(label);
      // the hops of the shortest route, as arcs from position to position
      const hops = kind === "recurrent" ? [...Array(dist + 1).keys()]
        : kind === "convolution" ? [...Array(steps.convolution + 1).keys()].map((j) => Math.min(dist, j * (k - 1)))
        : [0, dist];
      for (let j = 1; j < hops.length; j++) {
        const a = x(hops[j - 1]), b = x(hops[j]), lift = Math.min(22, 4 + (b - a) / 6);
        pic.append(common.s("path", { d: `M ${a} ${y} Q ${(a + b) / 2} ${y - 2 * lift} ${b} ${y}`,
                                      fill: "none", stroke: colour, "stroke-width": 2 }));
      }
      for (let i = 0; i <= dist; i++) {
        const end = i === 0 || i === dist;
        pic.append(common.s("circle", { cx: x(i), cy: y, r: end ? 5 : 3, fill: end ? "#000" : "#999" }));
      }
    });
    svg.replaceChildren(pic);
    summary.textContent = `From position 0 to position ${dist}, convolution width ${k}: `
      + kinds.map(([kind]) => `${kind} ${steps[kind]} step${steps[kind] > 1 ? "s" : ""}`).join(", ") + ".";
    table.replaceChildren(common.h("tr", {}, [common.h("th", {}, "layer"), common.h("th", {}, "steps")]),
      ...kinds.map(([kind]) => common.h("tr", {}, [common.h("td", {}, kind),
        common.h("td", { class: "num", "data-readout": `steps-${kind}` }, String(steps[kind]))])));
  }

  common.bindControls(model, { distance, kernel }, draw);
}

export default { render };
