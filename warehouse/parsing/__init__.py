"""Reading users' SQL text: statements, scripts and what a statement reads."""
