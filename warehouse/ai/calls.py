"""How many requests a query may make, and how many run at once.

Budget: each registered model has a `call_budget` of requests per query (cached rows cost
nothing). The AI macros pass DuckDB's `current_transaction_id()`, so "a query" is a statement
in autocommit and the whole transaction inside BEGIN ... COMMIT (a refresh of a dynamic table is
one transaction). A batch that would go past the budget is refused before it is sent, with an
error that says so: the query stops, whatever `on_error` says.

Concurrency: at most `concurrency` requests to one model are in flight in this process, however
many queries and batches ask at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from warehouse.ai.models import ModelSpec
from warehouse.errors import UserError

T = TypeVar("T")
R = TypeVar("R")
#: Transactions whose spending is remembered (the oldest is forgotten first).
REMEMBERED = 1024


class BudgetExceeded(UserError):
    """A query that would make more requests to a model than its call_budget."""


class Budgets:
    """Requests made per (transaction, model)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spent: OrderedDict[tuple[int, str], int] = OrderedDict()

    def charge(self, txid: int, spec: ModelSpec, calls: int, function: str) -> None:
        """Count `calls` more requests, or raise BudgetExceeded (counting none)."""
        with self._lock:
            key = (txid, spec.name)
            spent = self._spent.get(key, 0)
            if spent + calls > spec.call_budget:
                raise BudgetExceeded(
                    f"{function}: this query needs more than {spec.call_budget} requests to "
                    f"model {spec.name!r} (its call_budget in wanka.ai_models; {spent} made, "
                    f"{calls} more asked; cached rows cost none): ask for fewer rows, or have "
                    "an admin raise call_budget"
                )
            self._spent[key] = spent + calls
            self._spent.move_to_end(key)
            while len(self._spent) > REMEMBERED:
                self._spent.popitem(last=False)

    def spent(self, txid: int, model: str) -> int:
        with self._lock:
            return self._spent.get((txid, model), 0)


_gates: dict[str, threading.BoundedSemaphore] = {}
_gates_lock = threading.Lock()


def _gate(spec: ModelSpec) -> threading.BoundedSemaphore:
    with _gates_lock:
        key = f"{spec.name}/{spec.concurrency}"
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = threading.BoundedSemaphore(spec.concurrency)
        return gate


def each(spec: ModelSpec, items: Sequence[T], call: Callable[[T], R]) -> list[R]:
    """`call(item)` for every item, at most `spec.concurrency` at once in this process."""
    gate = _gate(spec)

    def gated(item: T) -> R:
        with gate:
            return call(item)

    if len(items) <= 1:
        return [gated(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(spec.concurrency, len(items))) as pool:
        return list(pool.map(gated, items))
