"""The authenticator kinds shipped: ``pam`` (the machine's passwords; for a real class)
and ``dummy`` (one shared password, for tests on 127.0.0.1 only)."""

from __future__ import annotations

from typing import Any

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def configure_pam(c: Any, plan: Any) -> None:
    c.JupyterHub.authenticator_class = "pam"
    # No PAM session per login: the spawner starts servers as the user itself.
    c.PAMAuthenticator.open_sessions = False


def configure_dummy(c: Any, plan: Any) -> None:
    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = plan.auth_options["password"]


def check_dummy(plan: Any) -> list[str]:
    found = []
    if not plan.auth_options.get("password"):
        found.append("authenticator dummy: no password")
    if plan.ip not in LOOPBACK:
        found.append(f"authenticator dummy: only on 127.0.0.1, not on {plan.ip} (use pam)")
    return found
