"""refgrad: the course's reference autograd engine (see source/README.md)."""

from .engine import Value, dot, topological_order, zero_grad

__all__ = ["Value", "dot", "topological_order", "zero_grad"]
