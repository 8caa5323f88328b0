"""Probe operations for 07_set_gradients (problem set 1, gradients at work), inside the kernel.

Every top-level name here starts with ``sg_``: the probe's files share one namespace."""

from __future__ import annotations

from .runtime import OPERATIONS

OPERATIONS.update({})
