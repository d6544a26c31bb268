"""A small LTI 1.3 platform for the tests: the LMS side of LTI Advantage's grade services.

    python tests/lti_platform.py --port 0 --tool-key tool-public.pem --client-id course-tool

Run by the tests as a process of its own on 127.0.0.1 (its first line of output is its address).
It serves what an LMS serves a tool that sends grades back, laid out and behaving as the LMS
named by ``--lms`` does (``plain``, the default; ``canvas``; ``moodle``), each taken from that
LMS's own source code (Canvas: ``app/controllers/lti/ims/scores_controller.rb``,
``concerns/gradebook_services.rb``; Moodle: ``mod/lti/service/gradebookservices/classes/local/
resources/{lineitems,lineitem,scores}.php``):

- ``POST /token``: OAuth 2.0 client credentials with a JWT client assertion, checked against the
  registered tool's public key, its client id and this endpoint as audience; answers a bearer
  token for the requested AGS scopes, which expires after ``--token-seconds``;
- the course's line-item container (GET, POST) and its line items (PUT), where the LMS puts them:
  ``/lineitems`` and ``/lineitems/<n>`` (plain); ``/api/lti/courses/2/line_items`` and
  ``.../line_items/<n>`` (Canvas, which pages a listing ``--page-size`` items at a time with a
  ``Link: <...>; rel="next"`` header); ``/mod/lti/services.php/2/lineitems?type_id=7`` and
  ``.../lineitems/<n>/lineitem?type_id=7`` (Moodle, which refuses any of them without its
  ``type_id``);
- a line item's scores, its URL's path with ``/scores`` added and its query kept; a score is
  checked for AGS's required fields and values and for a user who is a learner of the course
  (``--learners``, when given: Canvas answers 422, Moodle 400); what the LMS gradebook then shows
  follows each LMS (Canvas keeps ``scoreGiven`` only for ``FullyGraded`` and ``PendingManual``,
  Moodle only for ``FullyGraded``: anything else clears the grade);
- ``POST /control``: the test's levers: ``{"unavailable": N}`` answers the next N AGS requests
  with 503, ``{"expire_tokens": true}`` ends every token given so far;
- ``GET /received``: every line item, every score it accepted, what its gradebook shows, and
  every AGS request with the status it was answered, for the test to read.

and a course's launches into the tool (``--tool-url``, the hub), by LTI 1.3's OpenID Connect flow:

- ``GET /launch?user=<sub>&role=<Instructor|TeachingAssistant|Learner>``: the third-party initiated
  login, a redirect to the tool's ``/hub/lti13/oauth_login``; ``&fault=`` makes the launch that
  follows wrong in one way (``expired``, ``wrong-key``, ``wrong-client``, ``wrong-deployment``,
  ``no-roles``, ``other-course``: another course of the same deployment, ``azp``: one audience
  but another party's ``azp``, ``elsewhere``: a ``target_link_uri`` outside the hub,
  ``other-issuer``: a login start naming another issuer, ``slow-keys``: signed with a new key
  that the key set serves only after 4 seconds); ``&given=`` sets the given name and
  ``&canvas_id=`` sends Canvas's custom field ``canvas_user_id``;
- ``GET /auth``: the authorization endpoint the tool redirects to; it answers a page that posts a
  signed ``id_token`` (RS256, this platform's key) and the tool's ``state`` back to the tool;
- ``GET /jwks``: the platform's public key set;
- ``GET /replay``: the last launch's page again, the same token and state (a replay);
- ``GET /framed?...``: a page of this platform that shows ``/launch?...`` inside an iframe, as an
  LMS shows a tool inside its page (open it as ``localhost`` for a cross-site frame).

Every AGS request needs an unexpired bearer token and AGS's media types; anything else is refused
with the HTTP status the LMS would give and a message saying why.
"""
from __future__ import annotations

import argparse
import html
import json
import secrets
import threading
import re
import time
from dataclasses import dataclass, replace
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt

SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_LINE_ITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCORE_FIELDS = ("userId", "activityProgress", "gradingProgress", "timestamp")


DEPLOYMENT = "deployment-1"
KEY_ID = "platform-1"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim"
FAULTS = ("expired", "wrong-key", "wrong-client", "wrong-deployment", "no-roles", "other-course",
          "azp", "elsewhere", "other-issuer", "slow-keys")
ROTATED_KEY_ID = "platform-2"


def rsa_key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


GRADING_PROGRESS = ("FullyGraded", "Pending", "PendingManual", "Failed", "NotReady")
ACTIVITY_PROGRESS = ("Initialized", "Started", "InProgress", "Submitted", "Completed")
LINE_ITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"


@dataclass(frozen=True)
class Layout:
    """Where an LMS puts a course's AGS endpoints and what its URLs carry."""

    container: str              # the line-item container's path
    item_suffix: str            # what follows a line item's number in its URL
    query: str                  # the query every AGS URL of the LMS carries
    page_size: int              # a listing's page (0: the whole listing at once)
    keeps_score: tuple          # the gradingProgress values whose scoreGiven the gradebook keeps
    not_a_learner: int          # the status a score for someone not a learner is refused with

    def item_url(self, base: str, number: int) -> str:
        return f"{base}{self.container}/{number}{self.item_suffix}{self.query}"

    def route(self, path: str) -> tuple[str, int | None] | None:
        """("container", None), ("item", n) or ("scores", n) for a path of this layout."""
        if path == self.container:
            return "container", None
        match = re.fullmatch(re.escape(self.container) + r"/(\d+)" + re.escape(self.item_suffix)
                             + r"(/scores)?", path)
        if match is None:
            return None
        return ("scores" if match[2] else "item"), int(match[1])


LAYOUTS = {
    "plain": Layout("/lineitems", "", "", 0, GRADING_PROGRESS, 422),
    # Canvas: Api.paginate's 10 a page; ScoresController keeps scoreGiven for ACCEPT_GIVEN_SCORE_TYPES
    "canvas": Layout("/api/lti/courses/2/line_items", "", "", 10, ("FullyGraded", "PendingManual"), 422),
    # Moodle: every AGS URL of an LTI 1.3 tool carries ?type_id=; scores.php nulls scoreGiven
    # unless FullyGraded, and answers 400 for a user not gradable in the course
    "moodle": Layout("/mod/lti/services.php/2/lineitems", "/lineitem", "?type_id=7", 0,
                     ("FullyGraded",), 400),
}


class Gradebook:
    """The LMS's side of AGS: its line items, the scores it accepted, what its gradebook shows."""

    def __init__(self, layout: Layout, learners: set, token_seconds: float):
        self.layout, self.learners, self.token_seconds = layout, learners, token_seconds
        self.expiry: dict[str, float] = {}            # token -> when it stops working
        self.line_items: dict[str, dict] = {}
        self.scores: list[dict] = []
        self.shown: dict[str, dict] = {}              # line item -> {user: score shown}
        self.requests: list[list] = []                # [method, path with query, status]
        self.unavailable = 0


class Platform:
    def __init__(self, tool_key: str, client_id: str, tool_url: str = ""):
        self.tool_key, self.client_id, self.tool_url = tool_key, client_id, tool_url.rstrip("/")
        self.key, self.rogue_key = rsa_key(), rsa_key()      # its own, and one nobody registered
        self.rotated_key, self.slow_keys = rsa_key(), False  # a new key of its own, served late
        self.slow_served = 0
        self.launches: dict[str, dict] = {}
        self.last_page = b""
        self.tokens: dict[str, set] = {}
        self.ags = Gradebook(LAYOUTS["plain"], set(), 3600.0)   # main() sets the LMS's
        self.used_assertions: set[str] = set()
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    platform: Platform
    base: str

    def log_message(self, *args):                 # quiet: the test reads /received instead
        pass

    def _send(self, status: int, body, content_type: str = "application/json",
              headers: dict | None = None) -> int:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return status

    def _refuse(self, status: int, why: str) -> None:
        self._send(status, {"error": why})

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _scopes(self) -> set | None:
        """The scopes of the request's bearer token, or None when it has none that still works."""
        header = self.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ").strip()
        if not header.startswith("Bearer ") or self.ags.expiry.get(token, 0) < time.time():
            return None
        return self.platform.tokens.get(token)

    @property
    def ags(self) -> Gradebook:
        return self.platform.ags

    # ---- OAuth 2.0 client credentials --------------------------------------------------------
    def _token(self) -> None:
        form = {k: v[0] for k, v in parse_qs(self._body().decode()).items()}
        if form.get("grant_type") != "client_credentials" or form.get("client_assertion_type") != ASSERTION_TYPE:
            return self._refuse(400, "unsupported_grant_type: client credentials with a JWT assertion expected")
        try:
            claims = jwt.decode(form.get("client_assertion", ""), self.platform.tool_key,
                                algorithms=["RS256"], audience=f"{self.base}/token",
                                issuer=self.platform.client_id,
                                options={"require": ["exp", "iat", "jti", "sub"]})
        except jwt.PyJWTError as error:
            return self._refuse(401, f"invalid_client: {error}")
        with self.platform.lock:
            if claims["sub"] != self.platform.client_id or claims["jti"] in self.platform.used_assertions:
                return self._refuse(401, "invalid_client: wrong subject or a reused assertion")
            self.platform.used_assertions.add(claims["jti"])
            token = secrets.token_urlsafe(24)
            self.platform.tokens[token] = set(form.get("scope", "").split())
            self.ags.expiry[token] = time.time() + self.ags.token_seconds
        self._send(200, {"access_token": token, "token_type": "Bearer",
                         "expires_in": int(self.ags.token_seconds), "scope": form.get("scope", "")})

    # ---- AGS -------------------------------------------------------------------------------------
    def _control(self) -> None:
        levers = json.loads(self._body() or b"{}")
        with self.platform.lock:
            self.ags.unavailable += int(levers.get("unavailable", 0))
            if levers.get("expire_tokens"):
                self.ags.expiry = dict.fromkeys(self.ags.expiry, 0.0)
        self._send(200, {})

    def _ags(self, method: str) -> None:
        """One AGS request: authorised, routed by the LMS's layout, answered, and logged."""
        url = urlparse(self.path)
        status = self._ags_answer(method, url)
        with self.platform.lock:
            self.ags.requests.append([method, self.path, status])

    def _ags_answer(self, method: str, url) -> int:
        layout, query = self.ags.layout, parse_qs(url.query)
        with self.platform.lock:
            if self.ags.unavailable > 0:
                self.ags.unavailable -= 1
                return self._send(503, {"error": "the service is unavailable; try again"},
                                    headers={"Retry-After": "0"})
        route = layout.route(url.path)
        if route is None:
            return self._send(404, {"error": f"nothing at {url.path}"})
        kind, number = route
        required = parse_qs(layout.query.lstrip("?"))
        if any(query.get(name) != value for name, value in required.items()):
            # Moodle: without its type_id the request is taken for an LTI 2 tool proxy: refused
            return self._send(403 if kind == "scores" else 401,
                                {"error": f"this LMS requires {layout.query.lstrip('?')} on {url.path}"})
        scopes = self._scopes()
        if scopes is None:
            return self._send(401, {"error": "an unexpired bearer token from /token is required"})
        wanted = SCOPE_SCORE if kind == "scores" else SCOPE_LINE_ITEM
        if wanted not in scopes:
            return self._send(403, {"error": f"the token lacks {wanted}"})
        if kind == "container" and method == "GET":
            return self._list_line_items(query)
        if kind == "container" and method == "POST":
            return self._create_line_item()
        if kind == "item" and method == "PUT":
            return self._update_line_item(number)
        if kind == "scores" and method == "POST":
            return self._accept_score(number)
        return self._send(405, {"error": f"{method} is not allowed on {url.path}"})

    def _list_line_items(self, query: dict) -> int:
        wanted = query.get("resource_id", [None])[0]
        items = [i for i in self.ags.line_items.values() if wanted is None or i.get("resourceId") == wanted]
        size, headers = self.ags.layout.page_size, {}
        if size:
            page = int(query.get("page", ["1"])[0])
            if page * size < len(items):
                rest = {k: v[0] for k, v in query.items() if k not in ("page", "per_page")}
                following = urlencode({**rest, "page": page + 1, "per_page": size})
                headers["Link"] = f'<{self.base}{self.ags.layout.container}?{following}>; rel="next"'
            items = items[(page - 1) * size:page * size]
        return self._send(200, items, CONTAINER_TYPE, headers)

    def _create_line_item(self) -> int:
        if self.headers.get("Content-Type") != LINE_ITEM_TYPE:
            return self._send(415, {"error": f"a line item must be sent as {LINE_ITEM_TYPE}"})
        item = json.loads(self._body())
        if not isinstance(item.get("scoreMaximum"), (int, float)) or item["scoreMaximum"] <= 0 \
                or not item.get("label"):
            return self._send(400, {"error": "a line item needs a label and a scoreMaximum > 0"})
        with self.platform.lock:
            item["id"] = self.ags.layout.item_url(self.base, len(self.ags.line_items) + 1)
            self.ags.line_items[item["id"]] = item
        return self._send(201, item, LINE_ITEM_TYPE)

    def _update_line_item(self, number: int) -> int:
        item = self.ags.layout.item_url(self.base, number)
        if item not in self.ags.line_items:
            return self._send(404, {"error": f"no line item {item}"})
        with self.platform.lock:
            self.ags.line_items[item] = {**json.loads(self._body()), "id": item}
        return self._send(200, self.ags.line_items[item], LINE_ITEM_TYPE)

    def _accept_score(self, number: int) -> int:
        item = self.ags.layout.item_url(self.base, number)
        if item not in self.ags.line_items:
            return self._send(404, {"error": f"no line item {item}"})
        if self.headers.get("Content-Type") != SCORE_TYPE:
            return self._send(415, {"error": f"a score must be sent as {SCORE_TYPE}"})
        score = json.loads(self._body())
        why = score_fault(score)
        if why:
            return self._send(400, {"error": why})
        if self.ags.learners and score["userId"] not in self.ags.learners:
            return self._send(self.ags.layout.not_a_learner,
                                {"error": "User not found in course or is not a student"})
        kept = score.get("scoreGiven") if score["gradingProgress"] in self.ags.layout.keeps_score else None
        with self.platform.lock:
            self.ags.scores.append({**score, "lineItem": item})
            self.ags.shown.setdefault(item, {})[score["userId"]] = kept
        return self._send(200, {})

    def do_POST(self):
        path = urlparse(self.path).path
        if path == "/token":
            return self._token()
        if path == "/control":
            return self._control()
        self._ags("POST")

    # ---- LTI 1.3 launches ------------------------------------------------------------------
    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _launch(self, query: dict) -> None:
        hint = secrets.token_urlsafe(8)
        self.platform.launches[hint] = {"user": query.get("user", "someone"), "given": query.get("given", ""),
                                        "role": query.get("role", "Learner"), "fault": query.get("fault", ""),
                                        "canvas_id": query.get("canvas_id", "")}
        issuer = "https://another-platform.example" if query.get("fault") == "other-issuer" else self.base
        if query.get("fault") == "slow-keys":
            self.platform.slow_keys = True
        params = {"iss": issuer, "login_hint": hint, "target_link_uri": f"{self.platform.tool_url}/hub/",
                  "lti_message_hint": hint, "client_id": self.platform.client_id,
                  "lti_deployment_id": DEPLOYMENT}
        self._redirect(f"{self.platform.tool_url}/hub/lti13/oauth_login?{urlencode(params)}")

    def _id_token(self, launch: dict, nonce: str) -> str:
        now, fault = int(time.time()), launch["fault"]
        claims = {"iss": self.base, "sub": launch["user"], "aud": self.platform.client_id,
                  "azp": self.platform.client_id, "iat": now, "exp": now + 300, "nonce": nonce,
                  "name": f"A person called {launch['user']}",
                  "given_name": launch["given"] or launch["user"].title(),
                  "family_name": "Tester", "email": f"{launch['user']}@example.edu",
                  f"{CLAIM}/message_type": "LtiResourceLinkRequest", f"{CLAIM}/version": "1.3.0",
                  f"{CLAIM}/deployment_id": DEPLOYMENT,
                  f"{CLAIM}/target_link_uri": f"{self.platform.tool_url}/hub/",
                  f"{CLAIM}/resource_link": {"id": "course-hub-link"},
                  f"{CLAIM}/roles": [f"{MEMBERSHIP}#{launch['role']}"],
                  f"{CLAIM}/context": {"id": "course-1", "label": "AT101", "title": "Attention"}}
        if fault == "expired":
            claims["exp"] = now - 3600
        elif fault == "wrong-client":
            claims["aud"] = claims["azp"] = "another-tool"
        elif fault == "wrong-deployment":
            claims[f"{CLAIM}/deployment_id"] = "deployment-of-another-course"
        elif fault == "no-roles":
            del claims[f"{CLAIM}/roles"]
        elif fault == "other-course":
            claims[f"{CLAIM}/context"] = {"id": "course-2", "label": "OT201", "title": "Another course"}
        elif fault == "azp":
            claims["azp"] = "another-tool"
        elif fault == "elsewhere":
            claims[f"{CLAIM}/target_link_uri"] = "https://elsewhere.example/hub/"
        if launch["canvas_id"]:
            claims[f"{CLAIM}/custom"] = {"canvas_user_id": launch["canvas_id"]}
        key, kid = {"wrong-key": (self.platform.rogue_key, KEY_ID),
                    "slow-keys": (self.platform.rotated_key, ROTATED_KEY_ID)}.get(
                        fault, (self.platform.key, KEY_ID))
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})

    def _authorize(self, query: dict) -> None:
        launch = self.platform.launches.get(query.get("lti_message_hint") or query.get("login_hint", ""))
        if launch is None or query.get("client_id") != self.platform.client_id:
            return self._refuse(400, "unknown launch or client")
        token = self._id_token(launch, query.get("nonce", ""))
        page = ("<!DOCTYPE html><html lang='en'><title>Launching</title><body>"
                f"<form method='post' action='{html.escape(query['redirect_uri'])}'>"
                f"<input type='hidden' name='id_token' value='{token}'>"
                f"<input type='hidden' name='state' value='{html.escape(query.get('state', ''))}'>"
                "<button>Continue</button></form><script>document.forms[0].submit()</script>")
        self.platform.last_page = page.encode()
        self._send_page(self.platform.last_page)

    def _send_page(self, page: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def _jwks(self) -> None:
        keys = [(self.platform.key, KEY_ID)]
        if self.platform.slow_keys:                    # a key set that answers slowly, once
            self.platform.slow_keys = False
            self.platform.slow_served += 1
            time.sleep(4)
            keys.append((self.platform.rotated_key, ROTATED_KEY_ID))
        self._send(200, {"keys": [{**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())),
                                   "kid": kid, "alg": "RS256", "use": "sig"} for key, kid in keys]})

    def _framed(self, url) -> None:
        launch = html.escape(f"/launch?{url.query}")
        self._send_page(("<!DOCTYPE html><html lang='en'><title>An LMS course page</title><body>"
                         f"<h1>Course</h1><iframe title='the course hub' src='{launch}' width='1200' "
                         "height='800' allow='clipboard-write'></iframe></body></html>").encode())

    def do_GET(self):
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/launch":
            return self._launch(query)
        if url.path == "/auth":
            return self._authorize(query)
        if url.path == "/jwks":
            return self._jwks()
        if url.path == "/replay":
            return self._send_page(self.platform.last_page)
        if url.path == "/framed":
            return self._framed(url)
        if url.path == "/received":
            return self._send(200, {"line_items": list(self.ags.line_items.values()),
                                    "scores": self.ags.scores, "gradebook": self.ags.shown,
                                    "requests": self.ags.requests,
                                    "slow_key_sets_served": self.platform.slow_served})
        self._ags("GET")

    def do_PUT(self):
        self._ags("PUT")


def score_fault(score: dict) -> str:
    """What makes a score one no LMS takes (AGS 2.0, and both LMSs' checks), or ""."""
    missing = [name for name in SCORE_FIELDS if name not in score]
    if missing:
        return f"a score needs {', '.join(missing)}"
    if score["gradingProgress"] not in GRADING_PROGRESS or score["activityProgress"] not in ACTIVITY_PROGRESS:
        return f"unknown progress {score['gradingProgress']!r} / {score['activityProgress']!r}"
    if "scoreGiven" in score and not isinstance(score.get("scoreMaximum"), (int, float)):
        return "ScoreMaximum not supplied when ScoreGiven present"
    try:
        datetime.fromisoformat(score["timestamp"])
    except (TypeError, ValueError):
        return f"Provided timestamp of {score['timestamp']!r} not a valid timestamp"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tool-key", required=True, help="the tool's public key (PEM)")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--tool-url", default="", help="the tool's address (the hub), for launches")
    parser.add_argument("--lms", choices=sorted(LAYOUTS), default="plain",
                        help="whose AGS layout and rules to follow")
    parser.add_argument("--page-size", type=int, default=None,
                        help="line items a listing page holds (default: the LMS's)")
    parser.add_argument("--token-seconds", type=float, default=3600.0)
    parser.add_argument("--learners", default="",
                        help="comma-separated user ids of the course's learners (default: anyone)")
    args = parser.parse_args()
    with open(args.tool_key) as handle:
        platform = Platform(handle.read(), args.client_id, args.tool_url)
    layout = LAYOUTS[args.lms]
    if args.page_size is not None:
        layout = replace(layout, page_size=args.page_size)
    platform.ags = Gradebook(layout, set(filter(None, args.learners.split(","))), args.token_seconds)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    Handler.platform, Handler.base = platform, f"http://127.0.0.1:{server.server_address[1]}"
    print(Handler.base, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
