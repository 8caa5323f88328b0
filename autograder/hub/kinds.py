"""The registries a plan's kinds are looked up in: add one entry to support another kind.

``AUTHENTICATORS[kind]`` (``[authenticator] kind`` in the plan): how users log in.
``EXCHANGES[kind]`` (each course's ``exchange``): how assignments, submissions and
feedback travel between the course's grader and its students, and where ``watch`` takes
submissions from.

Each entry is a small object of plain functions; the defaults do nothing, so a kind
defines only what it needs. ``c`` is JupyterHub's configuration object. For example, in
this module: ``EXCHANGES["ngshare"] = ExchangeKind(user_settings=..., course_settings=...)``
(a hub-wide service is added once by ``configure``, which runs for each course of the kind).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import auth, filesystem, lti, ngshare


def _no_problems(*_: Any) -> list[str]:
    return []


def _nothing(*_: Any) -> None:
    return None


def _no_lines(*_: Any) -> str:
    return ""


@dataclass(frozen=True)
class AuthenticatorKind:
    # JupyterHub's authenticator settings: c.JupyterHub.authenticator_class and its own;
    # config.configure sets allowed_users and admin_users from the plan after it.
    configure: Callable[[Any, Any], None]
    # what is wrong with the plan for this kind, one line each
    check: Callable[[Any], list[str]] = _no_problems
    # only the plan's users may log in (c.Authenticator.allowed_users); False for a kind
    # that decides who logs in itself
    plan_users_only: bool = True
    # lines of Python for each course folder's nbgrader_config_hub.py (e.g. c.LTI...)
    course_settings: Callable[[Any, Any], str] = _no_lines


@dataclass(frozen=True)
class ExchangeKind:
    # nbgrader settings (a JSON-able dict) for the servers of users in ``courses``
    user_settings: Callable[[Any, list], dict]
    # lines of Python for the course folder's nbgrader_config_hub.py (c.Exchange..., and
    # c.Watch... for where watch takes submissions from)
    course_settings: Callable[[Any, Any], str]
    # as root before JupyterHub starts: folders, permissions
    prepare: Callable[[Any, Any], None] = _nothing
    # extra JupyterHub configuration for the course (e.g. a service of its own)
    configure: Callable[[Any, Any, Any], None] = _nothing
    check: Callable[[Any, Any], list[str]] = _no_problems


AUTHENTICATORS: dict[str, AuthenticatorKind] = {
    "pam": AuthenticatorKind(auth.configure_pam),
    "dummy": AuthenticatorKind(auth.configure_dummy, auth.check_dummy),
    "lti13": AuthenticatorKind(
        lti.configure, lti.check, plan_users_only=False, course_settings=lti.course_settings
    ),
}

EXCHANGES: dict[str, ExchangeKind] = {
    "filesystem": ExchangeKind(
        user_settings=filesystem.user_settings,
        course_settings=filesystem.course_settings,
        prepare=filesystem.prepare,
        check=filesystem.check,
    ),
    "ngshare": ExchangeKind(
        user_settings=ngshare.user_settings,
        course_settings=ngshare.course_settings,
        prepare=ngshare.prepare,
        configure=ngshare.configure,
        check=ngshare.check,
    ),
}
