"""Golden planner cases: titled (input, expected) pairs in fixtures/*.sql.

A case is `-- title: ...`, the input SQL, `-- expected:`, then the expected text, up to the next
title. Expected is `kind: reason` on its first line and, for incremental plans, the delta SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Case:
    file: str
    title: str
    input: str
    expected: str


def load_cases(name: str) -> list[Case]:
    cases: list[Case] = []
    title: str | None = None
    part = ""
    lines: dict[str, list[str]] = {"input": [], "expected": []}
    text = (FIXTURES / name).read_text()

    def flush() -> None:
        if title is not None:
            inp, exp = ("\n".join(lines[k]).strip() for k in ("input", "expected"))
            cases.append(Case(name, title, inp, exp))

    for line in text.splitlines():
        if line.startswith("-- title:"):
            flush()
            title, part, lines = (
                line.split(":", 1)[1].strip(),
                "input",
                {"input": [], "expected": []},
            )
        elif line.strip() == "-- expected:":
            part = "expected"
        elif title is not None and not (part == "input" and line.startswith("--")):
            lines[part].append(line)
    flush()
    return cases
