"""What students handed in, filed for grading: LMS downloads unpacked within limits
(``collect``) and the submitted folders found (``discovery``). Runs in the grader."""
