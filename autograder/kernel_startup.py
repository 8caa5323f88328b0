"""Runs first in every grading kernel (see ``Execute.extra_arguments`` in nbgrader_config.py).

It defines one name, ``load_grader``, which hidden test cells call. Each call loads the
grading helpers and the reference engine afresh, by absolute path, under a private module
name: a student file called like them in the submission folder, an entry planted in
``sys.modules``, or a helper function patched in an earlier cell changes nothing.
"""

# coursekit.self_check() (the last cell of every lesson) does nothing in a grading kernel.
__import__("os").environ["COURSEKIT_NO_SELF_CHECK"] = "1"


def load_grader(assignment, _startup_file=__file__):
    """Return the hidden-test module of ``assignment`` (e.g. "01_value"), freshly loaded."""
    import importlib.util
    import os
    import secrets
    import sys

    here = os.path.dirname(os.path.abspath(_startup_file))
    package = f"_grader_{secrets.token_hex(8)}"
    spec = importlib.util.spec_from_file_location(
        package,
        os.path.join(here, "hidden", "__init__.py"),
        submodule_search_locations=[os.path.join(here, "hidden")],
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module  # only while loading: relative imports look here
    try:
        spec.loader.exec_module(module)
        return importlib.import_module(f"{package}.{assignment}")
    finally:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
