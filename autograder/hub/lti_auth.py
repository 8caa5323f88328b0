"""Runs in the hub: students launch the course from the LMS (LTI 1.3).

``CourseLTI13Authenticator`` is ltiauthenticator's ``LTI13Authenticator`` (which checks the
launch's signature against the platform's JWKS, its issuer, audience, age, nonce and
state) with what a course hub needs besides:

- the launch's ``deployment_id`` is one the plan names (ltiauthenticator does not check it);
- the LMS course (the ``context`` claim, by id or label) maps onto a course of the hub
  (``courses``); the student joins its group ``nbgrader-<course>`` (a learner; other roles
  log in and join nothing); a name the plan gives an instructor needs an instructor role
  in the LMS, and nobody logs in as a course's grader account or a system account
  (root, daemons: a user id below 1000);
- the hub user name is ``username_prefix`` + the claim ``username_key`` (default ``sub``),
  lowercased, each character outside ``[a-z0-9_-]`` made ``-``: a unix user name, or the
  launch is refused; the unix user is made on the first launch (``useradd``, as root:
  the local spawner starts the student's server as them); then a launch may log in to an
  account that exists already only if the plan names it or an earlier launch made it
  (``made_dir`` keeps one empty file per account made): a claim that happens to equal
  the name of another account of the machine (a staff member's, a service's) must not
  open it;
- the launch is recorded for the grader (launches.py) in the course's
  ``lti/launches/<student>.json``: the student's ``sub`` and the AGS endpoints;
- ``/hub/lti13/jwks`` serves the tool's public key (``tool_key_file``), which the LMS
  checks the grader's AGS token requests with.

A launch refused for any of these gets HTTP 403 with one line saying why.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import re
from pathlib import Path

from jupyterhub import orm
from jupyterhub.handlers import BaseHandler
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler
from tornado.web import HTTPError
from traitlets import Bool, Dict, Set, Unicode, default

from ..lti.launches import LTI, STUDENT, Launch, LaunchError, write

LEARNER = "membership#Learner"  # the end of the LIS role URI of a student
FIRST_UID = 1000  # useradd's UID_MIN on Debian: below it, system accounts
TEACHING = ("membership#Instructor", "membership#Administrator")  # and of a teacher's


def _system_account(name: str) -> bool:
    """``name`` is a unix account below the first regular user id (root, daemons)."""
    try:
        return pwd.getpwnam(name).pw_uid < FIRST_UID
    except KeyError:
        return False


class CallbackHandler(LTI13CallbackHandler):
    """ltiauthenticator's launch handler; after the login, the student joins the course's
    group (the authenticator found it)."""

    async def login_user(self, data=None):
        user = await super().login_user(data)
        group = getattr(self, "lti_group", "")
        if user is not None and group:
            found = orm.Group.find(self.db, group)
            if found is None:
                found = orm.Group(name=group)
                self.db.add(found)
            if found not in user.orm_user.groups:
                user.orm_user.groups.append(found)
            self.db.commit()
        return user


class ToolJWKSHandler(BaseHandler):
    """The tool's public key as a JSON Web Key Set, for the LMS."""

    def check_xsrf_cookie(self):
        return

    def get(self):
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps({"keys": [self.authenticator.tool_jwk()]}))


class CourseLTI13Authenticator(LTI13Authenticator):
    """LTI 1.3 launches into the courses of a hub (see the module's doc)."""

    callback_handler = CallbackHandler

    deployment_ids = Set(
        Unicode(), config=True, help="the deployment ids of the tool on the platform"
    )
    courses = Dict(
        config=True, help="{LMS context id or label: course id}: the LMS courses of the hub"
    )
    course_roots = Dict(config=True, help="{course id: its folder}, where launches are kept")
    username_prefix = Unicode("", config=True, help="put before every LTI user's name")
    create_system_users = Bool(
        True, config=True, help="make a unix user on a student's first launch"
    )
    tool_key_file = Unicode("", config=True, help="the tool's RSA private key (PEM)")
    instructors = Set(
        Unicode(),
        config=True,
        help="the plan's instructors: their launches need an LMS teaching role",
    )
    no_login = Set(
        Unicode(), config=True, help="users nobody logs in as (graders, the hub's services)"
    )
    plan_users = Set(Unicode(), config=True, help="the plan's people: their accounts exist")
    made_dir = Unicode(
        "", config=True, help="a folder (root's) of one file per unix user a launch made"
    )

    @default("username_key")
    def _username_key(self):
        return "sub"

    @default("allow_all")
    def _allow_all(self):
        return True  # who may launch is the platform's to say; courses are checked here

    def get_handlers(self, app):
        return [*super().get_handlers(app), ("/lti13/jwks", ToolJWKSHandler)]

    def tool_jwk(self) -> dict:
        from pylti1p3.registration import Registration

        from ..lti.ags import public_pem

        if not self.tool_key_file:
            raise HTTPError(404, "no tool key: CourseLTI13Authenticator.tool_key_file")
        return dict(Registration.get_jwk(public_pem(Path(self.tool_key_file).read_text())))

    def unix_name(self, token: dict) -> str:
        raw = str(self.get_username(token)).lower()
        name = self.username_prefix + re.sub(r"[^a-z0-9_-]", "-", raw)
        if not STUDENT.fullmatch(name):
            raise HTTPError(403, f"{self.username_key} {raw[:40]!r}: not a unix user name")
        return name

    def course_of(self, token: dict) -> str:
        context = token.get(LTI + "context")
        if not isinstance(context, dict):
            raise HTTPError(403, "the launch names no LMS course (context claim)")
        for key in (context.get("id"), context.get("label")):
            if isinstance(key, str) and key in self.courses:
                return self.courses[key]
        label = str(context.get("label") or context.get("id"))[:40]
        raise HTTPError(403, f"LMS course {label!r} is not a course of this hub")

    async def authenticate(self, handler, data=None):
        token = data or {}
        deployment = token.get(LTI + "deployment_id")
        if deployment not in self.deployment_ids:
            raise HTTPError(403, f"deployment_id {str(deployment)[:40]!r} is not this tool's")
        name = self.unix_name(token)
        course = self.course_of(token)
        roles = [r for r in token.get(LTI + "roles") or [] if isinstance(r, str)]
        if _system_account(name):
            raise HTTPError(403, f"{name} is a system account: nobody logs in as it")
        if name in self.no_login:
            raise HTTPError(403, f"{name} is a grader's or a service's name: nobody logs in as it")
        if name in self.instructors and not any(r.endswith(TEACHING) for r in roles):
            raise HTTPError(403, f"{name} is an instructor: the LMS gave no instructor role")
        try:
            launch = Launch.from_id_token(name, token)
        except LaunchError as e:
            raise HTTPError(403, f"launch: {e}") from None
        if self.create_system_users:
            await self.make_unix_user(name)
        root = self.course_roots.get(course)
        if root:
            write(Path(root), launch)
        if any(r.endswith(LEARNER) for r in roles):
            handler.lti_group = f"nbgrader-{course}"
        return {"name": name}

    def may_open(self, name: str) -> bool:
        """Whether a launch may log in to the existing account ``name`` (module doc)."""
        made = bool(self.made_dir) and (Path(self.made_dir) / name).is_file()
        return name in self.plan_users or made

    async def make_unix_user(self, name: str) -> None:
        try:
            pwd.getpwnam(name)
        except KeyError:
            pass
        else:
            if not self.may_open(name):
                raise HTTPError(403, f"{name} is an account of this machine that no launch made")
            return
        cmd = ["useradd", "--create-home", "--shell", "/bin/bash", "--user-group", name]
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        _, err = await proc.communicate()
        if proc.returncode != 0:
            self.log.error("useradd %s: %s", name, err.decode(errors="replace").strip())
            raise HTTPError(500, f"could not make the unix user {name}")
        os.chmod(pwd.getpwnam(name).pw_dir, 0o700)  # theirs alone, whatever useradd's mode
        if self.made_dir:
            Path(self.made_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
            (Path(self.made_dir) / name).touch()
