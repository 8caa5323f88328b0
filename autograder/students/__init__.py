"""What students get and run: the student edition (``release``), their JupyterLab
(``lab``), the progress table (``self-check``), and ``payload/``, the files that ship.

``launcher.py`` ships to students as ``lab.py``: standard library only, nothing of the
grader."""
