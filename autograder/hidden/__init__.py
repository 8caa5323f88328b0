"""Hidden tests, one module per lesson; hidden cells reach them through ``load_grader``."""
