"""JupyterHub's configuration file for the course's hub: ``python -m autograder hub
--plan FILE`` runs ``jupyterhub -f`` on it with the plan's path in AUTOGRADER_HUB_PLAN.
Everything is in autograder/hub/config.py (``configure``)."""

import os
import sys

c = get_config()  # noqa: F821 (provided by traitlets when JupyterHub loads this file)

COURSE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if COURSE_ROOT not in sys.path:
    sys.path.insert(0, COURSE_ROOT)

from autograder.hub.config import configure  # noqa: E402
from autograder.hub.plan import checked  # noqa: E402

configure(c, checked(os.environ["AUTOGRADER_HUB_PLAN"]))
