"""A Sphinx extension for the book's build (``_config.yml``: ``sphinx.extra_extensions``).

sphinx-thebe adds its configuration script each time Sphinx reads the sources, and Jupyter Book's
build reads them twice, so every page declared ``const THEBE_JS_URL`` twice and logged a
SyntaxError (sphinx-togglebutton's inline script came twice too). Each page now carries each
script once.

Figures carry their numbers in their captions, as the source chapter numbers them (Figure 8.2,
8.10; the book's own additions lettered, Figure 8.A). Jupyter Book turns on Sphinx's ``numfig``,
whose running "Fig. 12" prefix would contradict them, and its default wins over ``_config.yml``
(set there, ``numfig: false`` is overridden again before the build starts, by
sphinx-jupyterbook-latex); it is switched off here, once the configuration is read.

The theme's sidebar opens and closes each part of the book with a ``<summary>`` that holds only an
icon, so a screen reader announced an unnamed control on every page (axe: ``summary-name``). Each
now carries the name of the part it opens ("Pages of 12. Transformers in practice").

One search box: the theme draws its search field in the sidebar, and the PyData theme under it
adds a second in a header bar above the page (its ``navbar_persistent``, which sphinx-book-theme's
empty default no longer clears); that bar is left out. Narrow screens keep the search button in
the page's own header.

Colab opens notebooks, not MyST Markdown, and Binder's JupyterLab opens a ``.md`` file in its text
editor: a chapter page's Colab, Binder and JupyterHub buttons lead to the page's notebook twin,
``<page>.ipynb``, which the student edition writes beside each Markdown page
(:func:`attention_course_instructor.book.edition.copy_sources`).
"""
from __future__ import annotations

import html
import re

# the theme's toctree: a part's link, then the <details> whose <summary> opens its pages
_PART_TOGGLE = re.compile(r'(<a class="reference internal" href="[^"]*">(?P<title>[^<]*)</a>'
                          r'\s*<details[^>]*>\s*)<summary>')


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


def name_toggles(toctree):
    """The sidebar's part toggles, each named after the part whose pages it shows. The theme hands
    the toctree over as HTML text or, for some callers, as a BeautifulSoup tree: either is named
    and handed back as it came."""
    if not isinstance(toctree, str):
        for summary in toctree.select("details > summary"):
            link = summary.parent.find_previous_sibling("a")
            if link is not None and not summary.has_attr("aria-label"):
                summary["aria-label"] = f"Pages of {link.get_text().strip()}"
        return toctree

    def named(match):
        title = html.unescape(match["title"]).strip()
        return f'{match[1]}<summary aria-label="{html.escape(f"Pages of {title}")}">'
    return _PART_TOGGLE.sub(named, toctree)


def _named_sidebar_toggles(app, pagename, templatename, context, doctree):
    # after the theme's handler, which puts generate_toctree_html into the context
    make = context.get("generate_toctree_html")
    if make is not None and not getattr(make, "names_toggles", False):
        def generate(*args, **kwargs):
            return name_toggles(make(*args, **kwargs))
        generate.names_toggles = True
        context["generate_toctree_html"] = generate


LAUNCHERS = ("Colab", "Binder", "JupyterHub")      # the theme's launch buttons that open a file


def twin_url(url: str) -> str:
    """A launch link to a page's ``.md`` source as a link to its notebook twin: Colab's path ends
    in it, Binder's ``urlpath`` and an nbgitpuller link's ``urlpath`` end in it (before any
    further parameter)."""
    return re.sub(r"\.md(?=$|&)", ".ipynb", url)


def _launchers_open_the_notebook_twin(app, pagename, templatename, context, doctree):
    # after sphinx-book-theme's launch buttons (its handler's priority is 501)
    if not str(context.get("page_source_suffix", "")).endswith(".md"):
        return
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if button.get("text") in LAUNCHERS and button.get("url"):
                button["url"] = twin_url(button["url"])


def _no_running_figure_numbers(app, config):
    config.numfig = False


def _one_search_box(app, config):
    config.html_theme_options = {**config.html_theme_options, "navbar_persistent": []}


def setup(app):
    # after sphinx-jupyterbook-latex's config-inited handler, which turns numfig on, and before the
    # saved environment is compared with the configuration (switched off at builder-inited, numfig
    # read as changed at every build, and Sphinx read every page again)
    app.connect("config-inited", _no_running_figure_numbers, priority=900)
    app.connect("config-inited", _one_search_box)
    app.connect("html-page-context", _dedupe_page_scripts, priority=100)   # before any that returns
    app.connect("html-page-context", _named_sidebar_toggles, priority=900)  # after the theme's
    app.connect("html-page-context", _launchers_open_the_notebook_twin, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
