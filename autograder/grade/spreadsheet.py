"""Moved to ``autograder/spreadsheet.py`` (the roster writes CSV too, outside ``grade/``);
kept so ``from .spreadsheet import write_csv`` in ``grade/`` goes on working."""

from ..spreadsheet import FORMULA_STARTS, NUMBER, read_cell, safe_cell, write_csv

__all__ = ["FORMULA_STARTS", "NUMBER", "read_cell", "safe_cell", "write_csv"]
