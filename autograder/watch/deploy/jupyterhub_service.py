"""`python -m autograder watch` as a JupyterHub managed service: the Hub starts it with
itself and starts it again if it exits (JupyterHub's docs, Services: Hub-Managed Services).

Paste this into jupyterhub_config.py, or run it from there (it needs only the standard
library, not the course's environment), then add the service:

    exec(open("/srv/course/autograder/watch/deploy/jupyterhub_service.py").read())
    c.JupyterHub.services.append(
        watch_service("/srv/course", "instructor", "/srv/course/.venv/bin/python")
    )

Running it as another ``user`` than the Hub's requires the Hub to run as root
(JupyterHub's docs, Launching a Hub-Managed Service). The watcher needs no access to the
Hub's API: it reads the exchange, so the entry asks for none. Its log goes to the Hub's.
The Hub gives a service little or nothing of its own environment: the entry sets PATH. When
the Hub stops, it sends SIGINT, then SIGTERM and SIGKILL seconds later: a grading run
cut short is graded again at the next start.
"""

from __future__ import annotations

import os

# Keys of a managed service entry, as JupyterHub documents them (name, command,
# environment, user, cwd; admin, url, api_token and the rest are not needed here).
SERVICE_KEYS = ("name", "command", "user", "cwd", "environment")


def service_path(python: str) -> str:
    """PATH for a service run with ``python``: the environment's bin/ first (nbgrader runs
    `alembic` from PATH). Not resolved: a virtualenv's python is a link to the system's."""
    return os.pathsep.join([os.path.dirname(python), "/usr/local/bin", "/usr/bin", "/bin"])


def watch_service(course: str, user: str, python: str, name: str = "autograder-watch") -> dict:
    """The ``c.JupyterHub.services`` entry ``name`` that runs the watcher of ``course`` (the
    course folder) as the unix ``user`` who owns it, with ``python`` (the course
    environment's interpreter, e.g. ``<course>/.venv/bin/python``). ``python -m autograder
    hub`` uses it for each course of its plan (autograder/hub/config.py)."""
    course, python = os.path.abspath(course), os.path.abspath(python)
    path = service_path(python)
    return {
        "name": name,
        "command": [python, "-m", "autograder", "watch", "--course", course],
        "user": user,
        "cwd": course,
        "environment": {"PATH": path, "PYTHONUNBUFFERED": "1"},
    }


# For example, in jupyterhub_config.py:
# c.JupyterHub.services.append(
#     watch_service("/srv/course", "instructor", "/srv/course/.venv/bin/python")
# )
