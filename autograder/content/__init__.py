"""Course content made from ``source/``: the generated notebooks and the slides.

Runs on the instructor's machine (``generate``, ``check-generated``, ``slides``)."""
