"""Load the client introspection corpus: `-- name` headers, one statement each."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"
_HEADER = re.compile(r"^-- (?P<name>(?!-).+)$", re.M)


@dataclass(frozen=True)
class Case:
    file: str
    name: str
    sql: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.name}"


def cases() -> list[Case]:
    """Every statement of every corpus file, titled by its `-- name` line."""
    found = []
    for path in sorted(CORPUS.glob("*.sql")):
        text = path.read_text()
        heads = list(_HEADER.finditer(text))
        for head, following in zip(heads, [*heads[1:], None], strict=True):
            body = text[head.end() : following.start() if following else len(text)].strip()
            if body:
                found.append(Case(path.stem, head["name"].strip(), body.rstrip(";").strip()))
    return found
