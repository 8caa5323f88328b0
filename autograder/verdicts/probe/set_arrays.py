"""Probe operations for 09_set_arrays (problem set 3, from scalars to arrays), inside the kernel.

Every top-level name here starts with ``sa_``: the probe's files share one namespace."""

from __future__ import annotations

from .runtime import OPERATIONS

OPERATIONS.update({})
