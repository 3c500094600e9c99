"""The `sql/` catalog: schema steps stay as they shipped, and `@include` fills in parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from warehouse.kernel import catalog

#: sha256 of the statements each shipped schema step ran when it shipped (its file's bytes then,
#: recorded in every warehouse's wanka.schema_migrations). A step that includes parts must expand
#: to the very same text, or a warehouse migrated before and one migrated after would differ.
#: Add a step here once it ships.
SHIPPED = {
    1: "8691aeebbf8fe1e8025b664213b1ee5c5f6aec749ac9e9825353c024a860582d",
    2: "721938ae2530d18af0e105b9a59a56ef7037db2143da4fbeaa1e311f1763a6af",
    3: "85b72dcd743fcc454e5e5f70076c2691b63e7f001b4b366cdf70471d7cbd0be6",
    4: "c2b6f8dff9927c2af29fc4d523f02c18746fac94c863d03d1254807410587180",
    5: "e1f794f8a5fc90ca718b53d969bba098461d8ac3410137859b666bf8c0c5316d",
    6: "9bd8a63475a7b61544fa036a71d4812418bcf7b04e131031c221db39259ac250",
    7: "20663d9e3caa4fcd311f9565053f370ab0d03f458d2ee8cb4ccbd61d86373ae9",
    8: "c270042341d9402f01ed8f1c120d659f10bc84847d459eb0933fafaaf6979651",
    10: "ead7fbc23a9b55c77005a40161e164fb1966dae11edbead024abfb72bd535270",
    11: "c5ecb59b498c99d21933105573b9563212ced104915cfb11b6b107e524a17195",
    12: "9bbd3b0882010d956290e1365c7df5eb0177e31d0a2f63208653ba0665d1281f",
    13: "321e2f7852dd8f8a4ded905c1a7cede5bf826e3fa5d6ddbdf9e9b23dfa104726",
    14: "b5172f960ef04ff10b6cee3c055506bec9e4b2da321ff16a84381e4a8d31e55b",
    15: "bfef4a21ab796a963ba34990f4d27133e99801f1fe7799cc2d00c18185aa4fb5",
    16: "3e5365b25307d57730744e06b2d863182f61e2bb21358d9360940102361a982b",
    17: "1a33896dcc5939c94732eab6a6f6de27f8ea0951f03e0396f48fa68cf8aef05c",
    18: "ea3c3c5cd0b75b8c1de609b322e8e7c1387a8f214c85e57ae18979859e8f3bd1",
    19: "967f85c6881cfd74a800bef23090ecc69b46b39a248d1442d221cbcea7d0d051",
    20: "1a7367f7a4df8c5f32296cb76366a53e665fece10abd8bbe82fad1b0648c05a1",
}


def test_shipped_steps_run_what_they_ran_when_they_shipped() -> None:
    steps = {step.version: step for step in catalog.migrations()}
    assert set(SHIPPED) <= set(steps)
    changed = [v for v, sha in SHIPPED.items() if steps[v].sha256 != sha]
    assert changed == [], f"schema steps {changed} no longer run the statements they shipped with"
    assert all("@include" not in step.sql for step in steps.values())


def test_steps_that_include_parts_still_spell_out_every_trigger() -> None:
    """The change triggers come from sql/schema/parts/ now; each still names its table."""
    by_version = {step.version: step.sql for step in catalog.migrations()}
    assert "@include(parts/change_count_triggers.sql, table=jobs)" in (
        catalog.sql_dir() / "schema" / "0005_dynamic_tables.sql"
    ).read_text(encoding="utf-8")
    assert by_version[5].count("CREATE TRIGGER") == 18
    assert "CREATE TRIGGER prom_samples_rows_update AFTER UPDATE ON prom_samples" in by_version[15]


def _parts(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_an_include_puts_its_arguments_in_for_the_placeholders(tmp_path: Path) -> None:
    folder = _parts(
        tmp_path,
        **{
            "outer.sql": "-- a comment, left out\n@include(inner.sql, table=${table});\n",
            "inner.sql": "DELETE FROM ${table} WHERE '${table}' <> '';\n",
        },
    )
    got = catalog.expand_includes("@include(outer.sql, table=jobs);\nSELECT 1;", folder)
    assert got == "DELETE FROM jobs WHERE 'jobs' <> '';\nSELECT 1;"


@pytest.mark.parametrize(
    ("include", "complaint"),
    [
        ("@include(inner.sql)", "inner.sql takes ['table'], not none"),
        ("@include(inner.sql, tabel=jobs)", "inner.sql takes ['table'], not ['tabel']"),
        ("@include(plain.sql, table=jobs)", "plain.sql takes no arguments, not ['table']"),
    ],
)
def test_an_include_must_give_exactly_the_parts_placeholders(
    tmp_path: Path, include: str, complaint: str
) -> None:
    folder = _parts(tmp_path, **{"inner.sql": "SELECT '${table}'", "plain.sql": "SELECT 1"})
    with pytest.raises(ValueError) as caught:
        catalog.expand_includes(f"SELECT * FROM ({include})", folder)
    assert str(caught.value) == f"{include}: {complaint}"
