"""The query path: running a statement, prepared statements, search_path and describing results."""
