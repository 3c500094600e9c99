"""ARCHITECTURE.md's package table names exactly the packages on disk, and each package says
what it is in its docstring: a package added, moved or removed without its line in the map, or
without the docstring the map leaves the detail to, fails here."""

from __future__ import annotations

import ast
import re

from tests.conftest import REPO

#: A row of the table: its first cell is the package's folder, e.g. | `warehouse/tsdb/` | ...
_ROW = re.compile(r"^\| `((?:warehouse|service)/\w+/|udfs/)` \|", flags=re.MULTILINE)


def listed() -> list[str]:
    """The folders the `## Packages` section of ARCHITECTURE.md names, in its order."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.partition("\n## Packages\n")[2].partition("\n## ")[0]
    return _ROW.findall(section)


def on_disk() -> set[str]:
    """Folders with an `__init__.py` directly under warehouse/ and service/, and udfs/."""
    found = {"udfs/"}
    for layer in ("warehouse", "service"):
        found |= {
            f"{layer}/{folder.name}/"
            for folder in (REPO / layer).iterdir()
            if (folder / "__init__.py").is_file()
        }
    return found


def test_the_table_names_every_package_on_disk_once() -> None:
    names = listed()
    assert len(names) == len(set(names)), (
        f"named twice: {sorted(n for n in names if names.count(n) > 1)}"
    )
    missing, extra = on_disk() - set(names), set(names) - on_disk()
    assert not missing and not extra, (
        f"ARCHITECTURE.md's package table lacks {sorted(missing)} and names {sorted(extra)}, "
        "which are not packages on disk"
    )


def test_every_package_has_a_docstring() -> None:
    bare = [
        package
        for package in sorted(on_disk())
        if not ast.get_docstring(ast.parse((REPO / package / "__init__.py").read_text("utf-8")))
    ]
    assert not bare, f"packages whose __init__.py says nothing of them: {bare}"
