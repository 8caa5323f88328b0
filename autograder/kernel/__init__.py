"""A grading kernel's limits and sandbox: what one submission may use (``Limits``),
the bubblewrap command line and control group it runs in, and how it is started
(``launch.py``, which runs before the kernel and imports nothing of the grader)."""
