"""What a Dask worker runs: the grading material it is sent (``material``,
``plugins``), the task that grades one submission (``task``) and the notebooks made
gradable from whatever was handed in (``submission``)."""
