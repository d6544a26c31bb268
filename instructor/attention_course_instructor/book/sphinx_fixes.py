"""A Sphinx extension for the book's build (``_config.yml``: ``sphinx.extra_extensions``).

sphinx-thebe adds its configuration script each time Sphinx reads the sources, and Jupyter Book's
build reads them twice, so every page declared ``const THEBE_JS_URL`` twice and logged a
SyntaxError (sphinx-togglebutton's inline script came twice too). Each page now carries each
script once.

Figures carry their numbers in their captions, as the source chapter numbers them (Figure 8.2,
8.10; the book's own additions lettered, Figure 8.A). Jupyter Book turns on Sphinx's ``numfig``,
whose running "Fig. 12" prefix would contradict them, and its default wins over ``_config.yml``
(set there, ``numfig: false`` is overridden again before the build starts); it is switched off
here, when the builder starts.
"""
from __future__ import annotations


def script_key(script) -> tuple:
    """What makes two page scripts the same: their file (an inline script has None or "") and their
    attributes, the inline body included."""
    attributes = getattr(script, "attributes", {}) or {}
    return (str(getattr(script, "filename", script) or ""), tuple(sorted(attributes.items())))


def unique_scripts(scripts: list) -> list:
    seen, kept = set(), []
    for script in scripts:
        key = script_key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    return kept


def _dedupe_page_scripts(app, pagename, templatename, context, doctree):
    # in place: the list is the builder's own, to which later handlers (myst-nb's widget
    # scripts) still add for this page
    if "script_files" in context:
        context["script_files"][:] = unique_scripts(context["script_files"])


def _no_running_figure_numbers(app):
    app.config.numfig = False


def setup(app):
    app.connect("builder-inited", _no_running_figure_numbers)
    app.connect("html-page-context", _dedupe_page_scripts, priority=100)   # before any that returns
    return {"parallel_read_safe": True, "parallel_write_safe": True}
