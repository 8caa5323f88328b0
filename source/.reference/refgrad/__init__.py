"""refgrad: the course's reference autograd engine (see source/README.md)."""

from .engine import Value, topological_order, zero_grad

__all__ = ["Value", "topological_order", "zero_grad"]
