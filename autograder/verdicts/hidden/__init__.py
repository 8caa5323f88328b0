"""Hidden tests, one module per assignment, named after its folder (``01_value.py``...).

They run in the grader's process, never in the student's kernel: ``verdicts/api.py`` looks a
test cell's grade id up in the module's ``TESTS`` and the test asks the probe in the kernel
for plain values to compare with the reference engine."""
