"""Flags for review: code a student wrote that belongs to a class honest work has no
use for. Read from the submitted cells without running them, in the grader."""
