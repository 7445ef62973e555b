"""Notebooks under nbval (this file makes notebooks/conftest.py a module of its own, beside tests/conftest.py)."""
