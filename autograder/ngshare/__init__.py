"""ngshare: an exchange over a REST API (client.py), nbgrader's exchange classes on it."""
