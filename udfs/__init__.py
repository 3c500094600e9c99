"""The field's quantitative models as pure functions, bound into DuckDB as SQL macros.

Each model (bandwidth, collectives, checkpoint, scheduling, energy, reliability, training) is
written once in Python against a small expression vocabulary (`expr`, `model`, `params`): the
same definition evaluates on numbers and numpy/Arrow arrays (what the tests compare against and
what Spark registers as Arrow UDFs) and on a symbolic value that renders SQL, with its formula,
units and source in its docstring. `registry` — the only module that imports duckdb — turns each
into a persistent DuckDB macro (rewritten only when its definition hash changed), so a model
function costs what the same formula written in SQL costs, folds to a constant, and returns NULL
for NULL and an error naming the function, argument and value outside its domain. `docs`
generates the table in `docs/model-functions.md`. `udfs` never imports `warehouse` or `service`.
"""
