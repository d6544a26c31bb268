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
