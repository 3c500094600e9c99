"""tests/bi holds `make bi-check` (Superset against wanka, run in `.venv-bi`), not tests: pytest
collects none of it, doctests included, because Superset is not installed beside wanka."""

collect_ignore_glob = ["*.py"]
