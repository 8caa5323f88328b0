"""Ready-made ways to run the watcher: a systemd unit (autograder-watch.service) and a
JupyterHub managed service (jupyterhub_service.py); docs/grading.md, watch."""
