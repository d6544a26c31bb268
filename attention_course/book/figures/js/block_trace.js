// Figures 8.13/8.14: the operations of a pre-norm block, their shapes, mixing and cost.
import * as common from "./common.js";

const HEADS = [1, 2, 4, 8];

// Mirrors attention_course.notes.block_cost.block_trace.
export function blockTrace(n, d, h, r) {
  const dk = d / h;
  const ops = [["X (input)", [n, d], false, false, 0],
    ["LN1(X)", [n, d], false, false, 0],
    ["Q, K, V = LN1(X) W_Q, W_K, W_V", [h, n, dk], false, false, 2 * n * d * 3 * d],
    ["S = Q K^T / sqrt(d_k)", [h, n, n], true, false, 2 * n * n * d],
    ["A = softmax over each row of S", [h, n, n], true, false, 0],
    ["heads = A V", [h, n, dk], true, false, 2 * n * n * d],
    ["MHA = concat(heads) W_O", [n, d], false, false, 2 * n * d * d],
    ["U = X + MHA", [n, d], false, true, 0],
    ["LN2(U)", [n, d], false, false, 0],
    ["GELU(LN2(U) W_1)", [n, r * d], false, false, 2 * n * d * r * d],
    ["MLP = GELU(...) W_2", [n, d], false, false, 2 * n * r * d * d],
    ["Y = U + MLP", [n, d], false, true, 0]];
  return ops.map(([name, shape, mixes, residual, flops]) => ({ name, shape, mixes, residual, flops }));
}

function render({ model, el }) {
  common.injectStyle();
  const root = common.figureRoot(model, "block-trace-fig");
  const op = common.slider({ label: "operation", min: 0, max: 11, step: 1, value: model.get("op"), name: "op" });
  const n = common.slider({ label: "tokens N", min: 1, max: 64, step: 1, value: model.get("n"), name: "n" });
  const d = common.slider({ label: "width d", min: 8, max: 128, step: 8, value: model.get("d"), name: "d" });
  const h = common.slider({ label: "heads h", values: HEADS, value: model.get("h"), name: "h" });
  const r = common.slider({ label: "expansion r", min: 1, max: 8, step: 1, value: model.get("r"), name: "r" });
  const reading = common.h("div", {});
  const table = common.h("table", { "aria-label": "every operation of the block" });
  const box = common.h("div", { class: "scroll", tabindex: 0, role: "region",
                              "aria-label": "every operation of the block, scrolls sideways" }, table);
  root.append(common.h("div", { class: "controls" }, [op.wrap, n.wrap, d.wrap, h.wrap, r.wrap]), reading, box);
  el.append(root);

  function draw() {
    const [N, D, Hh, R, k] = ["n", "d", "h", "r", "op"].map((x) => model.get(x));
    const trace = blockTrace(N, D, Hh, R), doubled = blockTrace(2 * N, D, Hh, R);
    const now = trace[k];
    const total = trace.reduce((s, t) => s + t.flops, 0);
    reading.replaceChildren(
      common.h("p", {}, [common.h("code", { "data-readout": "op" }, now.name), ": result ",
        common.h("strong", { class: "num", "data-readout": "shape" }, now.shape.join(" × ")), ". ",
        common.h("span", { "data-readout": "mixes" }, now.mixes ? "Mixes tokens" : (now.residual ? "Residual addition, per token" : "Per token")),
        now.mixes ? ": a token's result here depends on other tokens." : ": each token's row is computed from its own row alone."]),
      common.h("p", {}, ["Forward arithmetic of this step: ",
        common.h("strong", { class: "num", "data-readout": "flops" }, now.flops.toLocaleString("en-US")),
        " FLOPs; if N doubles: ×",
        common.h("strong", { class: "num", "data-readout": "ratio" }, now.flops ? String(doubled[k].flops / now.flops) : "–"),
        `. Whole block: ${total.toLocaleString("en-US")} FLOPs.`]));
    table.replaceChildren(common.h("tr", {}, ["", "operation", "shape", "×, N doubled"].map((x) => common.h("th", {}, x))),
      ...trace.map((t, i) => common.h("tr", { style: i === k ? "background:#fde8c8" : "" }, [
        common.h("td", {}, t.mixes ? "⇄" : t.residual ? "+" : "·"),
        common.h("td", { style: "text-align:left" }, t.name),
        common.h("td", { class: "num" }, t.shape.join("×")),
        common.h("td", { class: "num" }, t.flops ? String(doubled[i].flops / t.flops) : "")])));
  }

  common.bindControls(model, { op, n, d, h, r }, draw);
}

export default { render };
