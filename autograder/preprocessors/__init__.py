"""nbgrader preprocessors of the course, one per module as nbgrader's own are, named
in ``nbgrader_config.py`` so that ``nbgrader autograde`` and formgrader use them too."""
