"""A JupyterHub for the course on one machine: ``python -m autograder hub --plan FILE``.

``plan`` reads and checks the hub's plan (TOML: the hub, its authenticator, its courses);
``kinds`` holds the registries of authenticator and exchange kinds (one entry each);
``config.configure(c, plan)`` turns a plan into JupyterHub's configuration (the shipped
``jupyterhub_config.py`` calls it); ``launch`` prepares the folders and starts JupyterHub.
"""
