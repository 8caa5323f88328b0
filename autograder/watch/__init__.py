"""``python -m autograder watch``: grading on submit, a long-running service (service.py)."""
