// Figure 8.10: reorder four tokens; one self-attention head; positions and causal mask on slots;
// follow one token's rows of X, Q, K, V and O.
import * as common from "./common.js";

const NAMES = ["A", "B", "C", "D"];
const BLUE_RGB = [0, 114 / 255, 178 / 255];
// the colour a cell shows: blue at opacity `alpha` over the figure's white
const onWhite = (rgb, alpha) => rgb.map((c) => 1 - alpha + alpha * c);
const matmul = (A, B) => A.map((row) => B[0].map((_, j) => row.reduce((s, a, k) => s + a * B[k][j], 0)));

export function reorderAttention(setup, order, positions, causal) {
  const run = (ord) => {
    let X = ord.map((t) => setup.X[t].slice());
    if (positions) X = X.map((row, i) => row.map((x, j) => x + setup.P[i][j]));
    const Q = matmul(X, setup.W_Q), K = matmul(X, setup.W_K), V = matmul(X, setup.W_V);
    const scale = 1 / Math.sqrt(K[0].length);
    const A = Q.map((q, i) => common.softmax(K.map((k, j) =>
      causal && j > i ? -Infinity : q.reduce((s, x, c) => s + x * k[c], 0) * scale)));
    const O = matmul(A, V);
    const rows = {};                            // rows[name][t]: token t's row (slot order undone)
    Object.entries({ X, Q, K, V, O }).forEach(([name, M]) => {
      rows[name] = [];
      ord.forEach((t, slot) => { rows[name][t] = M[slot]; });
    });
    return { A, rows };
  };
  const now = run(order), original = run([0, 1, 2, 3]);
  const change = now.rows.O.map((row, t) => Math.max(...row.map((x, j) => Math.abs(x - original.rows.O[t][j]))));
  return { A: now.A, change, rows: now.rows };
}

function render({ model, el }) {
  common.injectStyle();
  const root = common.figureRoot(model, "reorder-fig");
  const selectId = `course-fig-order-${Math.random().toString(36).slice(2)}`;
  const select = common.h("select", { id: selectId, "data-control": "order" },
                          model.get("orders").map(([o]) => common.h("option", { value: o }, o)));
  const orderControl = common.h("div", { class: "control" }, [common.h("label", { for: selectId }, "token order"), select]);
  const positions = common.checkbox({ label: "add position vectors", checked: model.get("positions"), name: "positions" });
  const causal = common.checkbox({ label: "causal mask", checked: model.get("causal"), name: "causal" });
  const followId = `course-fig-follow-${Math.random().toString(36).slice(2)}`;
  const follow = common.h("select", { id: followId, "data-control": "follow" },
                          NAMES.map((n) => common.h("option", { value: n }, n)));
  const followControl = common.h("div", { class: "control" }, [common.h("label", { for: followId }, "follow token"), follow]);
  const matrix = common.h("table", { "aria-label": "attention matrix, rows are queries" });
  const followed = common.h("table", { "aria-label": "the followed token's rows of X, Q, K, V and O" });
  const followNote = common.h("p", {});
  const changes = common.h("table", { "aria-label": "how far each token's output moved" });
  root.append(common.h("div", { class: "controls" }, [orderControl, followControl, positions.wrap, causal.wrap]),
              common.h("p", {}, "Attention weights (rows: queries, columns: keys, each labelled by the token in that slot):"),
              matrix, followNote, followed,
              common.h("p", {}, "How far each token's output moved from the original order:"), changes);
  el.append(root);

  function draw() {
    const order = model.get("orders").find(([name]) => name === model.get("order"))[1];
    const r = reorderAttention(model.get("setup"), order, model.get("positions"), model.get("causal"));
    const head = common.h("tr", {}, [common.h("th", {}, ""), ...order.map((t) => common.h("th", {}, NAMES[t]))]);
    matrix.replaceChildren(head, ...r.A.map((row, i) => common.h("tr", {}, [
      common.h("th", {}, NAMES[order[i]]),
      ...row.map((w, j) => common.h("td", {
        class: "num", "data-readout": `A-${i}-${j}`,
        style: `background: rgba(0, 114, 178, ${w.toFixed(3)}); color: ${common.textOn(onWhite(BLUE_RGB, Number(w.toFixed(3))))}`,
      }, common.fmt(w))),
    ])));
    changes.replaceChildren(common.h("tr", {}, NAMES.map((n) => common.h("th", {}, n))),
      common.h("tr", {}, r.change.map((c, t) => common.h("td", { class: "num", "data-readout": `change-${NAMES[t]}` }, common.fmt(c)))));
    const t = NAMES.indexOf(model.get("follow"));
    const content = model.get("positions") ? "its content plus the position vector of its slot" : "its content";
    followNote.replaceChildren(`Token ${NAMES[t]}, now in slot ${order.indexOf(t) + 1}: its rows of X (${content}), ` +
                               "Q, K, V and the output O:");
    followed.replaceChildren(...["X", "Q", "K", "V", "O"].map((name) => common.h("tr", {}, [
      common.h("th", {}, name),
      ...r.rows[name][t].map((x, j) => common.h("td", { class: "num", "data-readout": `${name}-${j}` }, common.fmt(x, 2))),
    ])));
  }

  common.bindControls(model, { order: select, follow, positions, causal }, draw, ["setup"]);
}

export default { render };
