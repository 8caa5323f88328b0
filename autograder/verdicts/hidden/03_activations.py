"""03_activations: tanh, relu, exp, log, sigmoid, sin, cos, sqrt, and one neuron.

Its hidden tests are written in the notebook (the hidden regions of
source/03_activations/activations.ipynb), with the library checks of checks.py
(``check_op``, ``check_raises``, ``check_at_zero``, ``check_neuron``). Each compares the
op with the reference engine

- alone at random inputs, backpropagated from a random d(loss)/d(output) too, so that a
  ``_backward`` without ``* out.grad`` shows;
- at the inputs that matter for it: |x| up to 1000 for tanh and sigmoid (no overflow),
  relu at exactly 0, exp's overflow, the domains of log and sqrt, sqrt(0);
- inside random graphs with the arithmetic, backpropagated with backward().

Any correct formula passes: values are compared with a tolerance, never by how they were
computed, and random inputs stay away from kinks and domain edges.

The students start from their own engine of lessons 1-2 (the cell tagged ``engine``);
grading runs the course's lessons 1 and 2 there (``ENGINE``: arithmetic, backward()), and
the students attach the functions to it.
"""

from __future__ import annotations

from .lessons import lesson_engine

# The course's lessons 1 and 2, when graded (the cell tagged engine).
ENGINE = lesson_engine("03_activations", "Value", "numerical_grad", "grad_check")

TESTS: dict = {}  # every test is in the notebook
