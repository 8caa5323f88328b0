"""A small, real LTI 1.3 platform (the LMS side) for tests, on 127.0.0.1.

What an LMS does for a tool, by the specs (IMS Security Framework 1.0, LTI 1.3, AGS 2.0):

- ``GET /jwks``: the platform's public key (RS256), which the tool fetches to check a
  launch's signature.
- ``GET /launch?user=LOGIN&context=ID``: a student clicks the tool's link; the platform
  starts OIDC third-party login: a redirect to the tool's login URL with ``iss``,
  ``login_hint``, ``target_link_uri``, ``lti_message_hint``, ``client_id`` and
  ``lti_deployment_id``.
- ``GET|POST /authorize``: the tool's authentication request comes back (``client_id``,
  ``redirect_uri``, ``nonce``, ``state``, ...); the platform checks it and answers with a
  page whose form POSTs a signed ``id_token`` (every required LTI 1.3 claim, the nonce
  echoed, the AGS endpoint claim) and the ``state`` to the tool's ``redirect_uri``.
- ``POST /token``: OAuth 2 client credentials with a JWT client assertion, checked against
  the tool's public key (its JWKS URL, or a key given); an access token for the scopes.
- AGS, with a bearer token: ``GET|POST /ags/<context>/lineitems`` (line items),
  ``GET .../lineitems/<n>``, ``POST .../lineitems/<n>/scores``
  (``application/vnd.ims.lis.v1.score+json``) and ``GET .../lineitems/<n>/results``.

``forge`` makes the next launch's id_token wrong on purpose (another key, nonce, audience,
deployment, or expired), so a test sees the tool refuse it. Everything the platform got
is kept (``scores``, ``token_requests``) for tests to read.

    with LTIPlatform(tool_login_url, tool_redirect_uri, tool_jwks_url=...) as lms:
        lms.add_user("s1", sub="a1b2", name="Ada")
        requests.get(lms.launch_url("s1"))  # follows into the tool
"""

from __future__ import annotations

import html
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
AGS_SCOPES = [
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
]
LINEITEM_SCOPE, SCORE_SCOPE = AGS_SCOPES[0], AGS_SCOPES[3]
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def private_pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def public_jwk(key: rsa.RSAPrivateKey, kid: str) -> dict:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


@dataclass
class User:
    login: str
    sub: str
    name: str = ""
    email: str = ""
    roles: list[str] = field(default_factory=lambda: [LEARNER])


class LTIPlatform:
    """The platform; ``start()`` (or ``with``) serves it on 127.0.0.1 at a free port."""

    def __init__(
        self,
        tool_login_url: str = "",
        tool_redirect_uri: str = "",
        *,
        client_id: str = "autograder-tool",
        deployment_id: str = "deployment-1",
        tool_jwks_url: str = "",
        tool_public_key=None,
        target_link_uri: str = "",
    ):
        self.tool_login_url, self.tool_redirect_uri = tool_login_url, tool_redirect_uri
        self.target_link_uri = target_link_uri or tool_redirect_uri
        self.client_id, self.deployment_id = client_id, deployment_id
        self.tool_jwks_url, self.tool_public_key = tool_jwks_url, tool_public_key
        self.key, self.kid = new_key(), "platform-key-1"
        self.users: dict[str, User] = {}
        self.contexts = {"course-1": {"id": "course-1", "label": "AUTOGRAD", "title": "Autograd"}}
        self.hints: dict[str, dict] = {}  # lti_message_hint: the launch it stands for
        self.tokens: dict[str, list[str]] = {}  # access token: its scopes
        self.lineitems: dict[str, list[dict]] = {}  # context: its line items
        self.scores: dict[str, list[dict]] = {}  # line item URL: scores posted
        self.token_requests: list[tuple[int, str]] = []  # (status, why)
        self.forged: dict | None = None
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    # ---- running ------------------------------------------------------------------------

    def start(self) -> LTIPlatform:
        platform = self

        class Handler(_Handler):
            lms = platform

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LTIPlatform:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start the platform first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    issuer = url

    @property
    def jwks_url(self) -> str:
        return self.url + "/jwks"

    @property
    def authorize_url(self) -> str:
        return self.url + "/authorize"

    @property
    def token_url(self) -> str:
        return self.url + "/token"

    # ---- what a test sets up ----------------------------------------------------------------

    def add_user(self, login: str, sub: str, **kw) -> User:
        self.users[login] = User(login, sub, **kw)
        return self.users[login]

    def add_lineitem(self, context: str, label: str, maximum: float, **kw) -> dict:
        with self._lock:
            items = self.lineitems.setdefault(context, [])
            item = {
                "id": f"{self.lineitems_url(context)}/{len(items) + 1}",
                "label": label,
                "scoreMaximum": maximum,
                **kw,
            }
            items.append(item)
        return item

    def lineitems_url(self, context: str) -> str:
        return f"{self.url}/ags/{context}/lineitems"

    def launch_url(self, login: str, context: str = "course-1", lineitem: str = "") -> str:
        query = {"user": login, "context": context}
        if lineitem:
            query["lineitem"] = lineitem
        return f"{self.url}/launch?{urlencode(query)}"

    def forge(self, **how) -> None:
        """The next id_token is wrong: ``key=True`` (signed with another key), ``nonce``,
        ``aud``, ``deployment_id`` (values to put instead), ``expired=True``."""
        self.forged = how

    def results(self, lineitem_url: str) -> list[dict]:
        """The line item's results, as ``GET .../results`` gives them."""
        latest: dict[str, dict] = {}
        for score in self.scores.get(lineitem_url, []):
            latest[score["userId"]] = score
        return [
            {
                "id": f"{lineitem_url}/results/{user}",
                "scoreOf": lineitem_url,
                "userId": user,
                "resultScore": s.get("scoreGiven"),
                "resultMaximum": s.get("scoreMaximum"),
            }
            for user, s in latest.items()
            if s.get("gradingProgress") == "FullyGraded"
        ]

    # ---- the messages -----------------------------------------------------------------------

    def login_initiation(self, login: str, context: str, lineitem: str) -> str:
        hint = secrets.token_urlsafe(16)
        self.hints[hint] = {"login": login, "context": context, "lineitem": lineitem}
        query = {
            "iss": self.issuer,
            "login_hint": login,
            "target_link_uri": self.target_link_uri,
            "lti_message_hint": hint,
            "client_id": self.client_id,
            "lti_deployment_id": self.deployment_id,
        }
        return f"{self.tool_login_url}?{urlencode(query)}"

    def id_token(self, user: User, launch: dict, nonce: str) -> str:
        now = int(time.time())
        context = self.contexts[launch["context"]]
        ags = {"scope": AGS_SCOPES, "lineitems": self.lineitems_url(context["id"])}
        if launch.get("lineitem"):
            ags["lineitem"] = launch["lineitem"]
        claims = {
            "iss": self.issuer,
            "aud": self.client_id,
            "sub": user.sub,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            "name": user.name,
            "email": user.email,
            LTI + "message_type": "LtiResourceLinkRequest",
            LTI + "version": "1.3.0",
            LTI + "deployment_id": self.deployment_id,
            LTI + "target_link_uri": self.target_link_uri,
            LTI + "resource_link": {"id": f"link-{context['id']}", "title": "Autograd"},
            LTI + "roles": list(user.roles),
            LTI + "context": {**context, "type": ["CourseOffering"]},
            AGS_CLAIM: ags,
        }
        key, forged = self.key, self.forged or {}
        self.forged = None
        for name in ("nonce", "aud"):
            if name in forged:
                claims[name] = forged[name]
        if "deployment_id" in forged:
            claims[LTI + "deployment_id"] = forged["deployment_id"]
        if forged.get("expired"):
            claims["iat"], claims["exp"] = now - 3600, now - 1800
        if forged.get("key"):
            key = new_key()
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid})

    def authorize(self, args: dict[str, str]) -> tuple[int, str]:
        """(status, page) for the tool's authentication request."""
        expected = {
            "scope": "openid",
            "response_type": "id_token",
            "response_mode": "form_post",
            "prompt": "none",
            "client_id": self.client_id,
            "redirect_uri": self.tool_redirect_uri,
        }
        for name, value in expected.items():
            if args.get(name) != value:
                return 400, f"{name}: expected {value!r}, got {args.get(name)!r}"
        launch = self.hints.pop(args.get("lti_message_hint", ""), None)
        if launch is None or launch["login"] != args.get("login_hint"):
            return 400, "lti_message_hint: unknown, used, or not this login_hint's"
        if not args.get("nonce") or not args.get("state"):
            return 400, "nonce and state are required"
        token = self.id_token(self.users[launch["login"]], launch, args["nonce"])
        return 200, _form_post(self.tool_redirect_uri, {"id_token": token, "state": args["state"]})

    def token(self, form: dict[str, str]) -> tuple[int, dict]:
        status, body = self._token(form)
        self.token_requests.append((status, body.get("error_description", "")))
        return status, body

    def _token(self, form: dict[str, str]) -> tuple[int, dict]:
        if form.get("grant_type") != "client_credentials":
            return 400, _error("unsupported_grant_type", "grant_type: client_credentials")
        if form.get("client_assertion_type") != ASSERTION_TYPE:
            return 400, _error("invalid_request", "client_assertion_type: jwt-bearer")
        try:
            key = self._tool_key(form.get("client_assertion", ""))
            claims = jwt.decode(
                form.get("client_assertion", ""),
                key,
                algorithms=["RS256"],
                audience=self.token_url,
                options={"require": ["iss", "sub", "aud", "exp", "iat", "jti"]},
            )
        except Exception as e:  # any failure of the assertion is the same answer
            return 401, _error("invalid_client", f"client assertion: {e}")
        if claims["iss"] != self.client_id or claims["sub"] != self.client_id:
            return 401, _error("invalid_client", "client assertion: not this client_id")
        scopes = [s for s in form.get("scope", "").split() if s in AGS_SCOPES]
        if not scopes:
            return 400, _error("invalid_scope", "no AGS scope asked for")
        access = secrets.token_urlsafe(24)
        self.tokens[access] = scopes
        return 200, {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": " ".join(scopes),
        }

    def _tool_key(self, assertion: str):
        if self.tool_public_key is not None:
            return self.tool_public_key
        return jwt.PyJWKClient(self.tool_jwks_url).get_signing_key_from_jwt(assertion).key

    def ags(self, method: str, path: str, scopes: list[str], body: dict | None):
        """(status, JSON body or None, content type) of an AGS request to ``path``."""
        parts = path.strip("/").split("/")  # ags, context, lineitems[, n[, scores|results]]
        if len(parts) < 3 or parts[0] != "ags" or parts[2] != "lineitems":
            return 404, {"error": "no such endpoint"}, "application/json"
        context, rest = parts[1], parts[3:]
        items = self.lineitems.get(context, [])
        if not rest:
            if method == "GET":
                return 200, items, "application/vnd.ims.lis.v2.lineitemcontainer+json"
            if LINEITEM_SCOPE not in scopes:
                return 403, {"error": "lineitem scope needed"}, "application/json"
            extra = {k: v for k, v in (body or {}).items() if k not in ("id", "label")}
            maximum = extra.pop("scoreMaximum", 0)
            item = self.add_lineitem(context, (body or {}).get("label", ""), maximum, **extra)
            return 201, item, "application/vnd.ims.lis.v2.lineitem+json"
        item = next((i for i in items if i["id"].rsplit("/", 1)[1] == rest[0]), None)
        if item is None:
            return 404, {"error": "no such line item"}, "application/json"
        if len(rest) == 1:
            return 200, item, "application/vnd.ims.lis.v2.lineitem+json"
        if rest[1] == "results" and method == "GET":
            return 200, self.results(item["id"]), "application/vnd.ims.lis.v2.resultcontainer+json"
        if rest[1] == "scores" and method == "POST":
            if SCORE_SCOPE not in scopes:
                return 403, {"error": "score scope needed"}, "application/json"
            wanted = ("userId", "activityProgress", "gradingProgress", "timestamp")
            if not body or any(k not in body for k in wanted):
                return 400, {"error": f"a score has {', '.join(wanted)}"}, "application/json"
            with self._lock:
                self.scores.setdefault(item["id"], []).append(body)
            return 200, None, "application/json"
        return 405, {"error": "method not allowed"}, "application/json"


def _error(code: str, why: str) -> dict:
    return {"error": code, "error_description": why}


def _form_post(action: str, fields: dict[str, str]) -> str:
    inputs = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
        for k, v in fields.items()
    )
    return (
        '<!doctype html><html><body onload="document.forms[0].submit()">'
        f'<form method="post" action="{html.escape(action)}">{inputs}'
        '<noscript><button type="submit">Continue</button></noscript></form></body></html>'
    )


class _Handler(BaseHTTPRequestHandler):
    lms: LTIPlatform

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body, content_type: str = "application/json", headers=()):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        if body is None:
            data = b""
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _args(self, body: bytes = b"") -> dict[str, str]:
        query = parse_qs(urlparse(self.path).query)
        query.update(parse_qs(body.decode()))
        return {k: v[0] for k, v in query.items()}

    def do_GET(self) -> None:
        self._route("GET", b"")

    def do_POST(self) -> None:
        self._route("POST", self._body())

    def _route(self, method: str, body: bytes) -> None:
        path, lms = urlparse(self.path).path, self.lms
        if path == "/jwks":
            return self._send(200, {"keys": [public_jwk(lms.key, lms.kid)]})
        if path == "/launch":
            args = self._args()
            if args.get("user") not in lms.users or args.get("context") not in lms.contexts:
                return self._send(404, {"error": "no such user or context"})
            to = lms.login_initiation(args["user"], args["context"], args.get("lineitem", ""))
            return self._send(302, "", "text/plain", [("Location", to)])
        if path == "/authorize":
            status, page = lms.authorize(self._args(body))
            return self._send(status, page, "text/html" if status == 200 else "text/plain")
        if path == "/token" and method == "POST":
            status, answer = lms.token(self._args(body))
            return self._send(status, answer)
        if path.startswith("/ags/"):
            auth = self.headers.get("Authorization", "")
            scopes = lms.tokens.get(auth.removeprefix("Bearer "), [])
            if not auth.startswith("Bearer ") or not scopes:
                return self._send(401, {"error": "a bearer token from /token is needed"})
            data = None
            if method == "POST":
                try:
                    data = json.loads(body or b"{}")
                except ValueError:
                    return self._send(400, {"error": "the body is not JSON"})
            status, answer, content_type = lms.ags(method, path, scopes, data)
            return self._send(status, answer, content_type)
        return self._send(404, {"error": f"no {path}"})
