"""Work done ahead on threads comes back in order, raises where its result would, and stops
when its reader does."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from warehouse.kernel.ahead import ahead


def test_results_come_in_order_and_no_further_than_asked() -> None:
    """In order though done on threads; a reader that stops after the first has had at most
    `depth` more items drawn, and those not yet begun never run."""
    drawn: list[int] = []

    def items() -> Iterator[int]:
        for k in range(50):
            drawn.append(k)
            yield k

    assert list(ahead(items(), lambda k: k * k, depth=3)) == [k * k for k in range(50)]
    drawn.clear()
    first = ahead(items(), lambda k: k * k, depth=3)
    assert next(first) == 0
    first.close()
    assert drawn == [0, 1, 2, 3]


def test_what_work_raises_comes_out_in_its_place() -> None:
    def work(k: int) -> int:
        if k == 3:
            raise ValueError("three")
        return k

    found = ahead(range(10), work)
    assert [next(found) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="three"):
        next(found)


def test_items_are_drawn_on_the_callers_thread() -> None:
    drawn: list[int] = []

    def items() -> Iterator[int]:
        for k in range(5):
            drawn.append(threading.get_ident())
            yield k

    assert list(ahead(items(), lambda k: k)) == list(range(5))
    assert set(drawn) == {threading.get_ident()}
