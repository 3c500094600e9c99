"""The wheel built from the checkout, installed in a new virtual environment outside it, is a
working `wanka`: its sql/ files (schema, reference data) and web page inside, a demo built and
queried from another folder, nothing read from the checkout."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
#: Variables that would point the installed wanka back at the checkout or a database.
UNSET = ("PYTHONPATH", "WANKA_DB", "WANKA_SHARED_DATA", "VIRTUAL_ENV")


def run(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{argv}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def build_wheel(out: Path) -> Path:
    """`pip wheel` as anyone would run it, but with the test environment's hatchling (the
    build backend, in the test extra) instead of one downloaded into an isolated build."""
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "--wheel-dir", out, REPO, cwd=out)  # fmt: skip
    [wheel] = out.glob("wanka-*.whl")
    return wheel


def venv_with(wheel: Path, folder: Path) -> Path:
    """A new virtual environment with `wheel` alone installed; its dependencies come from this
    environment's site-packages, listed in a .pth file. Only the lines of a .pth file in the
    new site-packages are read: the .pth files inside the directory it adds (among them the
    editable install's, which points at a checkout) are not, so the checkout stays out."""
    run(sys.executable, "-m", "venv", "--without-pip", folder, cwd=folder.parent)
    python = folder / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
        wheel, cwd=folder.parent)  # fmt: skip
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=folder).strip())  # fmt: skip
    (site / "wanka_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return folder / "bin"


def test_the_wheel_holds_every_sql_file_and_the_web_page(tmp_path: Path) -> None:
    names = set(zipfile.ZipFile(build_wheel(tmp_path)).namelist())
    shipped = {
        f"warehouse/_sql/{path.relative_to(REPO / 'sql').as_posix()}"
        for path in (REPO / "sql").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert any(name.startswith("warehouse/_sql/reference/") for name in shipped)
    assert not shipped - names, sorted(shipped - names)
    assert {"service/http/static/index.html", "service/pgwire/compat/macros.sql"} <= names


def test_installed_wheel_builds_and_queries_a_demo_from_another_folder(tmp_path: Path) -> None:
    bin_dir = venv_with(build_wheel(tmp_path), tmp_path / "venv")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    where = run(
        bin_dir / "python", "-c",
        "import warehouse, service, udfs; from warehouse.kernel.catalog import sql_dir; "
        "print(warehouse.__file__, service.__file__, udfs.__file__, sql_dir(), sep='\\n')",
        cwd=elsewhere, env=env,
    ).split()  # fmt: skip
    for path in where:
        assert Path(path).is_relative_to(tmp_path / "venv"), where
    assert (Path(where[-1]) / "reference" / "gpu_models.csv").is_file()

    db = elsewhere / "w.duckdb"
    built = run(bin_dir / "wanka", "--db", db, "demo", "--no-serve", "--gpus", "16",
                "--hours", "0.25", cwd=elsewhere, env=env)  # fmt: skip
    assert "built the demo warehouse" in built
    # the telemetry, joined to the reference table of GPU models, through a model UDF
    sql = (
        "SELECT count(*) AS samples, count(DISTINCT m.host) AS hosts, "
        "count(DISTINCT g.model) AS models, max(pcie_gbs(4, 16)) AS gbs "
        "FROM gpu_metrics m JOIN nodes n USING (host) JOIN gpu_models g ON g.model = n.gpu_model"
    )
    out = run(bin_dir / "wanka", "--db", db, "sql", "-f", "csv", sql, cwd=elsewhere, env=env)
    [row] = list(csv.DictReader(out.splitlines()))
    print(f"installed wheel's demo: {row}")
    assert int(row["samples"]) > 0 and int(row["hosts"]) == 2 and int(row["models"]) >= 1
    assert float(row["gbs"]) == pytest.approx(31.5, rel=0.01)
