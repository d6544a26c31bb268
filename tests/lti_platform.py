"""A small LTI 1.3 platform for the tests: the LMS side of LTI Advantage's grade services.

    python tests/lti_platform.py --port 0 --tool-key tool-public.pem --client-id course-tool

Run by the tests as a process of its own on 127.0.0.1 (its first line of output is its address).
It serves what an LMS serves a tool that sends grades back:

- ``POST /token``: OAuth 2.0 client credentials with a JWT client assertion, checked against the
  registered tool's public key, its client id and this endpoint as audience; answers a bearer
  token for the requested AGS scopes;
- ``GET /lineitems`` (``?resource_id=``) and ``POST /lineitems``: the course's line-item
  container; ``PUT /lineitems/<n>``: change one;
- ``POST /lineitems/<n>/scores``: a score, checked for AGS's required fields;
- ``GET /received``: everything it accepted, for the test to read.

and a course's launches into the tool (``--tool-url``, the hub), by LTI 1.3's OpenID Connect flow:

- ``GET /launch?user=<sub>&role=<Instructor|TeachingAssistant|Learner>``: the third-party initiated
  login, a redirect to the tool's ``/hub/lti13/oauth_login``; ``&fault=`` makes the launch that
  follows wrong in one way (``expired``, ``wrong-key``, ``wrong-client``, ``wrong-deployment``,
  ``no-roles``, ``other-course``: another course of the same deployment, ``azp``: one audience
  but another party's ``azp``, ``elsewhere``: a ``target_link_uri`` outside the hub,
  ``other-issuer``: a login start naming another issuer, ``slow-keys``: signed with a new key
  that the key set serves only after 8 seconds); ``&given=`` sets the given name and
  ``&canvas_id=`` sends Canvas's custom field ``canvas_user_id``;
- ``GET /auth``: the authorization endpoint the tool redirects to; it answers a page that posts a
  signed ``id_token`` (RS256, this platform's key) and the tool's ``state`` back to the tool;
- ``GET /jwks``: the platform's public key set;
- ``GET /replay``: the last launch's page again, the same token and state (a replay);
- ``GET /framed?...``: a page of this platform that shows ``/launch?...`` inside an iframe, as an
  LMS shows a tool inside its page (open it as ``localhost`` for a cross-site frame).

Every AGS request needs the bearer token and AGS's media types; anything else is refused with the
HTTP status an LMS would give and a message saying why.
"""
from __future__ import annotations

import argparse
import html
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt

SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_LINE_ITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCORE_FIELDS = ("userId", "scoreGiven", "scoreMaximum", "activityProgress", "gradingProgress",
                "timestamp")


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


class Platform:
    def __init__(self, tool_key: str, client_id: str, tool_url: str = ""):
        self.tool_key, self.client_id, self.tool_url = tool_key, client_id, tool_url.rstrip("/")
        self.key, self.rogue_key = rsa_key(), rsa_key()      # its own, and one nobody registered
        self.rotated_key, self.slow_keys = rsa_key(), False  # a new key of its own, served late
        self.slow_served = 0
        self.launches: dict[str, dict] = {}
        self.last_page = b""
        self.tokens: dict[str, set] = {}
        self.line_items: dict[str, dict] = {}
        self.scores: list[dict] = []
        self.used_assertions: set[str] = set()
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    platform: Platform
    base: str

    def log_message(self, *args):                 # quiet: the test reads /received instead
        pass

    def _send(self, status: int, body, content_type: str = "application/json") -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, status: int, why: str) -> None:
        self._send(status, {"error": why})

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _scopes(self) -> set | None:
        header = self.headers.get("Authorization", "")
        return self.platform.tokens.get(header.removeprefix("Bearer ").strip()) \
            if header.startswith("Bearer ") else None

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
        self._send(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                         "scope": form.get("scope", "")})

    # ---- AGS -------------------------------------------------------------------------------------
    def do_POST(self):
        path = urlparse(self.path).path
        if path == "/token":
            return self._token()
        scopes = self._scopes()
        if scopes is None:
            return self._refuse(401, "a bearer token from /token is required")
        if path == "/lineitems":
            if SCOPE_LINE_ITEM not in scopes:
                return self._refuse(403, f"the token lacks {SCOPE_LINE_ITEM}")
            if self.headers.get("Content-Type") != "application/vnd.ims.lis.v2.lineitem+json":
                return self._refuse(415, "a line item must be sent as application/vnd.ims.lis.v2.lineitem+json")
            item = json.loads(self._body())
            if not isinstance(item.get("scoreMaximum"), (int, float)) or item["scoreMaximum"] <= 0 \
                    or not item.get("label"):
                return self._refuse(400, "a line item needs a label and a scoreMaximum > 0")
            with self.platform.lock:
                item["id"] = f"{self.base}/lineitems/{len(self.platform.line_items) + 1}"
                self.platform.line_items[item["id"]] = item
            return self._send(201, item, "application/vnd.ims.lis.v2.lineitem+json")
        if path.startswith("/lineitems/") and path.endswith("/scores"):
            if SCOPE_SCORE not in scopes:
                return self._refuse(403, f"the token lacks {SCOPE_SCORE}")
            item = f"{self.base}{path.removesuffix('/scores')}"
            if item not in self.platform.line_items:
                return self._refuse(404, f"no line item {item}")
            if self.headers.get("Content-Type") != "application/vnd.ims.lis.v1.score+json":
                return self._refuse(415, "a score must be sent as application/vnd.ims.lis.v1.score+json")
            score = json.loads(self._body())
            missing = [field for field in SCORE_FIELDS if field not in score]
            if missing:
                return self._refuse(400, f"a score needs {', '.join(missing)}")
            with self.platform.lock:
                self.platform.scores.append({**score, "lineItem": item})
            return self._send(200, {})
        self._refuse(404, f"nothing at {path}")

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
            time.sleep(8)
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
            return self._send(200, {"line_items": list(self.platform.line_items.values()),
                                    "scores": self.platform.scores,
                                    "slow_key_sets_served": self.platform.slow_served})
        if url.path != "/lineitems":
            return self._refuse(404, f"nothing at {url.path}")
        if self._scopes() is None:
            return self._refuse(401, "a bearer token from /token is required")
        wanted = parse_qs(url.query).get("resource_id", [None])[0]
        items = [i for i in self.platform.line_items.values()
                 if wanted is None or i.get("resourceId") == wanted]
        self._send(200, items, "application/vnd.ims.lis.v2.lineitemcontainer+json")

    def do_PUT(self):
        item = f"{self.base}{urlparse(self.path).path}"
        if self._scopes() is None:
            return self._refuse(401, "a bearer token from /token is required")
        if item not in self.platform.line_items:
            return self._refuse(404, f"no line item {item}")
        with self.platform.lock:
            self.platform.line_items[item] = {**json.loads(self._body()), "id": item}
        self._send(200, self.platform.line_items[item], "application/vnd.ims.lis.v2.lineitem+json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tool-key", required=True, help="the tool's public key (PEM)")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--tool-url", default="", help="the tool's address (the hub), for launches")
    args = parser.parse_args()
    with open(args.tool_key) as handle:
        platform = Platform(handle.read(), args.client_id, args.tool_url)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    Handler.platform, Handler.base = platform, f"http://127.0.0.1:{server.server_address[1]}"
    print(Handler.base, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
