// Byte-pair encoding step by step: apply the first k learned merges to the text.
import * as common from "./common.js";

const END = "_";

// Mirrors attention_course.tokens.tokenize_with.
export function tokenizeWith(text, merges) {
  const out = [];
  for (const word of text.split(/\s+/).filter((w) => w.length)) {
    let symbols = [...word, END];
    for (const [a, b] of merges) {
      const next = [];
      for (let i = 0; i < symbols.length; i++) {
        if (i + 1 < symbols.length && symbols[i] === a && symbols[i + 1] === b) { next.push(a + b); i++; }
        else next.push(symbols[i]);
      }
      symbols = next;
    }
    out.push(...symbols);
  }
  return out;
}

function render({ model, el }) {
  common.injectStyle();
  const merges = model.get("merges"), text = model.get("text");
  const root = common.figureRoot(model, "bpe-steps-fig");
  const step = common.slider({ label: "merges applied", min: 0, max: merges.length, step: 1,
                               value: model.get("step"), name: "step" });
  const reading = common.h("p", {});
  // the token strip wraps inside the figure's box at any width (flex items, not one long line)
  const shown = common.h("p", { "data-readout": "strip",
                                style: "display:flex;flex-wrap:wrap;gap:3px 2px;line-height:1.6" });
  root.append(common.h("div", { class: "controls" }, [step.wrap]), reading, shown);
  el.append(root);

  function draw() {
    const k = model.get("step");
    const symbols = tokenizeWith(text, merges.slice(0, k));
    const last = k ? merges[k - 1].join("") : null;
    reading.replaceChildren(
      k ? `Merge ${k}: “${merges[k - 1][0]}” + “${merges[k - 1][1]}” → “${last}”. ` : "Characters only. ",
      "Tokens in the text: ", common.h("strong", { class: "num", "data-readout": "tokens" }, String(symbols.length)),
      "; distinct symbols in use: ", common.h("strong", { class: "num", "data-readout": "in-use" }, String(new Set(symbols).size)), ".");
    shown.replaceChildren(...symbols.map((s) => common.h("span", {
      style: `border:1px solid #999;border-radius:3px;padding:1px 3px;white-space:pre;${s === last ? "background:#fde8c8" : ""}` }, s)));
  }

  common.bindControls(model, { step }, draw);
}

export default { render };
