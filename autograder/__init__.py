"""Grading and publishing tools for the course; run ``python -m autograder --help``."""
