"""The authenticator kind ``lti13``: students launch the course from the LMS (LTI 1.3);
``export --to lti`` sends their scores back (autograder/lti/ags.py).

The plan's keys (``[authenticator]``, kind = "lti13"), all given by the LMS when the tool
is registered there, but ``tool_key`` (the tool's own) and the optional last three:

- ``issuer``: the platform's issuer (``iss``); ``client_id``: the tool's (a string or a
  list); ``deployment_ids``: the tool's deployments (a list);
- ``authorize_url`` (OIDC authorization endpoint), ``jwks_url`` (the platform's keys),
  ``token_url`` (OAuth 2 token endpoint, for AGS);
- ``tool_key``: the tool's RSA private key (PEM); the LMS gets its public key from
  ``/hub/lti13/jwks``;
- ``username_claim`` (default ``sub``): the id_token claim that names the hub user, e.g.
  ``email`` or ``custom_uname`` (the custom claim's ``uname``); ``username_prefix`` (default
  ``""``) goes before it (the result must be a unix user name); ``uri_scheme`` (default
  ``auto``: what the HTTPS proxy in front says the browser used; or ``https``, ``http``):
  the scheme of the redirect URL the hub gives the LMS.

Each course that students launch into says which LMS courses are it: ``lti_contexts =
["<context id or label>", ...]`` in its ``[[courses]]`` table. A course's grader gets
``c.LTI.*`` (issuer, client_id, token_url, private_key_file) in the course's
nbgrader_config_hub.py, so ``export --to lti`` needs nothing more, and
``c.Watch.lti_scores``: the course's watch service sends each score it grades.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .auth import LOOPBACK

AUTHENTICATOR = "autograder.hub.lti_auth.CourseLTI13Authenticator"
URLS = ("issuer", "authorize_url", "jwks_url", "token_url")


def _client_ids(options: dict) -> list[str]:
    value = options.get("client_id", [])
    return [value] if isinstance(value, str) else list(value)


def tool_key(plan: Any) -> Path:
    """The tool's private key file (a relative path is relative to the plan)."""
    return (plan.path.parent / str(plan.auth_options.get("tool_key", ""))).resolve()


def contexts(plan: Any) -> dict[str, str]:
    """{LMS context id or label: course id}."""
    return {ctx: c.id for c in plan.courses for ctx in c.options.get("lti_contexts", [])}


def configure(c: Any, plan: Any) -> None:
    o = plan.auth_options
    c.JupyterHub.authenticator_class = AUTHENTICATOR
    a = c.CourseLTI13Authenticator
    a.issuer = o["issuer"]
    a.client_id = set(_client_ids(o))
    a.deployment_ids = set(o["deployment_ids"])
    a.authorize_url = o["authorize_url"]
    a.jwks_endpoint = o["jwks_url"]
    a.tool_key_file = str(tool_key(plan))
    a.username_key = o.get("username_claim", "sub")
    a.username_prefix = o.get("username_prefix", "")
    a.courses = contexts(plan)
    a.course_roots = {course.id: str(course.folder) for course in plan.courses}
    a.instructors = {name for course in plan.courses for name in course.instructors}
    # graders, and names of the hub's services (ngshare knows people by name only: a user
    # called watch-<course> would be that course's instructor there)
    a.no_login = (
        {course.grader for course in plan.courses}
        | {name for course in plan.courses for name in (course.id, f"watch-{course.id}")}
        | {"ngshare"}
    )
    a.plan_users = plan.users()
    a.made_dir = str(plan.state / "lti-made-users")
    # "auto": the scheme the browser used, from the HTTPS proxy's X-Forwarded-Proto
    a.uri_scheme = o.get("uri_scheme", "auto")


def course_settings(plan: Any, course: Any) -> str:
    """The course's c.LTI (export --to lti) and c.Watch.lti_scores: watch sends each
    graded score to the LMS."""
    o = plan.auth_options
    return "c.Watch.lti_scores = True\n" + "".join(
        f"c.LTI.{name} = {value!r}\n"
        for name, value in [
            ("issuer", o["issuer"]),
            ("client_id", _client_ids(o)[0]),
            ("token_url", o["token_url"]),
            ("private_key_file", str(tool_key(plan))),
        ]
    )


def check(plan: Any) -> list[str]:
    o = plan.auth_options
    found = []
    for key in (*URLS, "tool_key"):
        if not isinstance(o.get(key), str) or not o[key]:
            found.append(f"authenticator lti13: no {key}")
    for key in URLS:
        url = urlparse(str(o.get(key, "")))
        if o.get(key) and url.scheme != "https" and url.hostname not in LOOPBACK:
            found.append(f"authenticator lti13: {key} must be https, not {o[key]}")
    ids = _client_ids(o)
    if not ids or not all(isinstance(i, str) and i for i in ids):
        found.append("authenticator lti13: no client_id")
    deployments = o.get("deployment_ids")
    if not isinstance(deployments, list) or not deployments:
        found.append("authenticator lti13: deployment_ids must be a list of the tool's ids")
    if o.get("tool_key") and not tool_key(plan).is_file():
        found.append(f"authenticator lti13: no tool_key file {tool_key(plan)}")
    if not contexts(plan):
        found.append("authenticator lti13: no course has lti_contexts (its LMS courses)")
    taken: dict[str, str] = {}
    for course in plan.courses:
        for ctx in course.options.get("lti_contexts", []):
            if ctx in taken:
                found.append(f"lti_contexts {ctx!r}: in courses {taken[ctx]} and {course.id}")
            taken[ctx] = course.id
    return found
