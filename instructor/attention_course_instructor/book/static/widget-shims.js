// Glue between the book's locally served widget manager and its other scripts.
// Loaded after require.js and before embed-amd.js on pages that hold widgets (see _config.yml).
(function () {
  "use strict";
  // 1. The widget manager finds its own files (icon fonts) relative to the module path RequireJS
  //    gives it; point that path at the copy served beside this file, at any page depth.
  var here = document.currentScript.src;
  var vendor = here.slice(0, here.lastIndexOf("/") + 1);
  //    Its bundle defines three more modules by name; each finds the fonts beside the path of
  //    its own name, which without a path would be a folder "@jupyter-widgets/" beside the page.
  //    The course's figures are anywidgets: their front end is served beside it too.
  window.require.config({ paths: {
    "@jupyter-widgets/html-manager/dist": vendor + "html-manager",
    "@jupyter-widgets/html-manager": vendor + "html-manager/html-manager",
    "@jupyter-widgets/base": vendor + "html-manager/base",
    "@jupyter-widgets/controls": vendor + "html-manager/controls",
    "anywidget": vendor + "anywidget/index",
  } });

  // 2. Widget labels are typeset with the MathJax 2 call MathJax.Hub.Queue; the book loads
  //    MathJax 3, which has no Hub. Once MathJax 3 is loaded, give it a Hub that forwards.
  document.addEventListener("DOMContentLoaded", function () {
    var mj = window.MathJax;
    if (mj && !mj.Hub) {
      mj.Hub = {
        Queue: function (job) {
          var element = Array.isArray(job) ? job[2] : undefined;
          if (mj.startup && mj.startup.promise && mj.typesetPromise) {
            mj.startup.promise.then(function () { return mj.typesetPromise(element ? [element] : undefined); });
          }
        },
      };
    }
  });
})();
