"""A student's server: which pages may show it inside a frame (its Content-Security-Policy).

JupyterHub's default, none, stays, unless the hub is shown inside the LMS's page: then the LMS's
origin (``COURSE_FRAME_ORIGIN``, the platform file's ``frame_origin``) may frame it."""
import os

c = get_config()  # noqa: F821  (provided by Jupyter)
# the regrade page (jupyter_server_config.json enables it) lives beside the submission client
import sys  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "hub"))
c.ServerApp.tornado_settings = {}
if os.environ.get("COURSE_FRAME_ORIGIN"):
    c.ServerApp.tornado_settings = {"headers": {
        "Content-Security-Policy": f"frame-ancestors {os.environ['COURSE_FRAME_ORIGIN']}"}}

if os.environ.get("COURSE_FRAME_ORIGIN"):    # cookies inside the LMS's frame: partitioned (CHIPS),
    import http.cookies                      # an attribute Python's cookies learn in 3.14

    http.cookies.Morsel._reserved.setdefault("partitioned", "Partitioned")
    http.cookies.Morsel._flags.add("partitioned")
    c.ServerApp.tornado_settings["xsrf_cookie_kwargs"] = {"samesite": "None", "secure": True,
                                                          "partitioned": True}
