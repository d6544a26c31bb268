"""An instructor's server: which pages may show it inside a frame (its Content-Security-Policy).

The hub's own origin may, so that *Nbgrader > Formgrader* opens inside JupyterLab (JupyterHub's
default, none, blocks formgrader's frame; ``jupyterhub_config.py`` says why this is safe on the
course hub); where the hub is shown inside the LMS's page, the LMS's origin too
(``COURSE_FRAME_ORIGIN``, the platform file's ``frame_origin``)."""
import os

c = get_config()  # noqa: F821  (provided by Jupyter)
ancestors = " ".join(["'self'", os.environ.get("COURSE_FRAME_ORIGIN", "")]).strip()
c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": f"frame-ancestors {ancestors}"}}

if os.environ.get("COURSE_FRAME_ORIGIN"):    # cookies inside the LMS's frame: partitioned (CHIPS),
    import http.cookies                      # an attribute Python's cookies learn in 3.14

    http.cookies.Morsel._reserved.setdefault("partitioned", "Partitioned")
    http.cookies.Morsel._flags.add("partitioned")
    c.ServerApp.tornado_settings["xsrf_cookie_kwargs"] = {"samesite": "None", "secure": True,
                                                          "partitioned": True}
