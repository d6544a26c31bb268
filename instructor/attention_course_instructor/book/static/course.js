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

// What a search result quotes: the page's own text, not its header buttons ("Binder Colab .ipynb"),
// its previous/next links or its figures' print forms; words of neighbouring blocks (a glossary's
// term and its definition, table cells, list items) stay apart.
const SEARCH_SKIPS = [".bd-header-article", ".prev-next-area", ".prev-next-footer", ".onlyprint",
  ".bd-footer-content", ".course-fig-fallback", ".print-only", "nav", ".headerlink"];
const SEARCH_BLOCKS = "p, li, dt, dd, td, th, h1, h2, h3, h4, h5, h6, pre, div, section, tr, figcaption";

function searchableText(page) {
  for (const skip of SEARCH_SKIPS) page.querySelectorAll(skip).forEach((e) => e.remove());
  for (const formula of page.querySelectorAll(".math")) {
    formula.textContent = ` ${plainTex(formula.textContent)} `;
  }
  for (const block of page.querySelectorAll(SEARCH_BLOCKS)) block.append(" ");
  return page;
}
window.courseSearchableText = searchableText;          // the browser test reads it

document.addEventListener("DOMContentLoaded", function () {
  // one search field on the search page: its own (the sidebar's and the header's buttons go)
  if (document.getElementById("search-results") || /\/search\.html$/.test(location.pathname)) {
    document.documentElement.classList.add("course-search-page");
  }
  // searchtools.js declares `const Search`: a global name, but not a property of window
  const search = typeof Search === "undefined" ? undefined : Search;  // eslint-disable-line no-undef
  if (!search || !search.htmlToText || search.htmlToText.plainFormulas) return;
  const original = search.htmlToText;
  search.htmlToText = function (htmlString, anchor) {
    const page = searchableText(new DOMParser().parseFromString(htmlString, "text/html"));
    return original.call(this, page.documentElement.outerHTML, anchor).replace(/\s+/g, " ");
  };
  search.htmlToText.plainFormulas = true;
  // a page's glossary terms are results of their own (index entries and objects): keep each
  // page once, at its best place (results are shown from the end of the list, the best first)
  const perform = search._performSearch;
  if (perform) {
    search._performSearch = function (...args) {
      const seen = new Set(), kept = [];
      for (const result of perform.apply(this, args).reverse()) {
        if (!seen.has(result[0])) { seen.add(result[0]); kept.push(result); }
      }
      return kept.reverse();
    };
  }
});
