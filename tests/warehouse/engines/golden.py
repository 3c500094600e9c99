"""Golden portable-SQL cases: titled (input, expected) pairs in fixtures/*.sql.

A case is `-- title: ...`, the DuckDB-dialect input, `-- expected:`, then either the Spark SQL
the rules produce or `-- problem: ...` lines (what `portability_problems` reports, in order).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Case:
    title: str
    input: str
    expected: str  # Spark SQL, or '' when problems are expected
    problems: list[str]


def load_cases(name: str) -> list[Case]:
    cases: list[Case] = []
    title: str | None = None
    parts: dict[str, list[str]] = {"input": [], "expected": []}
    part = "input"

    def flush() -> None:
        if title is not None:
            problems = [
                line.split(":", 1)[1].strip()
                for line in parts["expected"]
                if line.startswith("-- problem:")
            ]
            kept = [line for line in parts["expected"] if not line.startswith("--")]
            expected = "\n".join(kept).strip()
            cases.append(Case(title, "\n".join(parts["input"]).strip(), expected, problems))

    for line in (FIXTURES / name).read_text().splitlines():
        if line.startswith("-- title:"):
            flush()
            title, part = line.split(":", 1)[1].strip(), "input"
            parts = {"input": [], "expected": []}
        elif line.strip() == "-- expected:":
            part = "expected"
        elif title is not None and (part == "expected" or not line.startswith("--")):
            parts[part].append(line)
    flush()
    return cases
