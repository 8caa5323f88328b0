"""``python -m autograder collect`` (being written)."""

PATTERN_HELP = ""
