"""Probe operations for 08_set_training (problem set 2, training for real), inside the kernel.

Every top-level name here starts with ``st_``: the probe's files share one namespace."""

from __future__ import annotations

from .runtime import OPERATIONS

OPERATIONS.update({})
