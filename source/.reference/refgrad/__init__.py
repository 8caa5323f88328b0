"""refgrad: the course's reference autograd engine (see README.md beside this package)."""

from .engine import Value, topological_order, zero_grad

__all__ = ["Value", "topological_order", "zero_grad"]
