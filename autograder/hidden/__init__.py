"""Hidden tests, one module per assignment, named after its folder (``01_value.py``...);
hidden cells reach them through ``load_grader("01_value")``."""
