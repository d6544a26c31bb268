// The book's own page script. A display formula wider than the page scrolls sideways inside its
// box (course.css); a keyboard must be able to scroll it too, so such a box -- and only such a
// box -- becomes a Tab stop, named as a formula that scrolls (WCAG 2.1.1; axe:
// scrollable-region-focusable). Formulas that fit stay out of the Tab order.
(function () {
  function mark() {
    for (const box of document.querySelectorAll('div.math, mjx-container[display="true"]')) {
      const overflow = getComputedStyle(box).overflowX;
      const scrolls = (overflow === "auto" || overflow === "scroll")
        && box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", "Formula, scrolls sideways");
      } else if (!scrolls && box.getAttribute("role") === "region") {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    }
  }
  function whenTypeset() {
    const mj = window.MathJax;
    (mj && mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve()).then(mark);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", whenTypeset);
  else whenTypeset();
  window.addEventListener("resize", mark);
})();

// Search results quote each page's text, in which a formula is still its TeX source (MathJax
// typesets it only when the page itself is shown): "\(\sqrt{d_k}\)". Before Sphinx's search
// cuts a snippet from a page, each formula there is rewritten as plain text ("√(d_k)").
const TEX_NAMES = {
  alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", eta: "η",
  theta: "θ", lambda: "λ", mu: "μ", pi: "π", rho: "ρ", sigma: "σ", tau: "τ", phi: "φ",
  omega: "ω", Delta: "Δ", Sigma: "Σ", Omega: "Ω", top: "ᵀ", times: "×", cdot: "·", le: "≤",
  leq: "≤", ge: "≥", geq: "≥", in: "∈", to: "→", rightarrow: "→", mapsto: "↦", approx: "≈",
  neq: "≠", pm: "±", infty: "∞", sum: "∑", prod: "∏", ldots: "…", dots: "…", cdots: "⋯",
  quad: " ", qquad: " ", ",": " ", ";": " ", ":": " ", "!": "", " ": " ",
};
const TEX_WRAPPERS = /\\(?:mathrm|mathbf|mathit|mathcal|mathbb|boldsymbol|text|textrm|operatorname)\s*\{([^{}]*)\}/g;

function plainTex(tex) {
  let text = tex.trim().replace(/^\\[([]|\\[)\]]$/g, "").replace(/\^(?:\{\\top\}|\\top)/g, "ᵀ");
  for (let pass = 0; pass < 3; pass++) {               // nested groups, inside out
    text = text.replace(TEX_WRAPPERS, "$1")
      .replace(/([_^])\{([^{}]*)\}/g, (whole, op, body) => op + (body.length > 1 ? `(${body})` : body))
      .replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)")
      .replace(/\\sqrt\s*\{([^{}]*)\}/g, "√($1)");
  }
  return text.replace(/\\(?:left|right|big|Big|bigl|bigr)\b/g, "")
    .replace(/\\\\|&/g, " ")
    .replace(/\\([a-zA-Z]+|[,;:! ])/g, (whole, name) => TEX_NAMES[name] ?? name)
    .replace(/[{}]/g, "").replace(/\s+/g, " ").trim();
}
window.coursePlainTex = plainTex;                      // the browser test reads it

document.addEventListener("DOMContentLoaded", function () {
  // searchtools.js declares `const Search`: a global name, but not a property of window
  const search = typeof Search === "undefined" ? undefined : Search;  // eslint-disable-line no-undef
  if (!search || !search.htmlToText || search.htmlToText.plainFormulas) return;
  const original = search.htmlToText;
  search.htmlToText = function (htmlString, anchor) {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    for (const formula of page.querySelectorAll(".math")) {
      formula.textContent = ` ${plainTex(formula.textContent)} `;
    }
    return original.call(this, page.documentElement.outerHTML, anchor);
  };
  search.htmlToText.plainFormulas = true;
});
