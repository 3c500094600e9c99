"""Polling Slurm: `sacct --parsable2` for the window since the last poll and `scontrol show job
-d --oneliner`, ingested through the sacct and scontrol readers (rows replaced by key, so a job
seen RUNNING and then COMPLETED is one row, the newest).

The commands run with `TZ=UTC`, so the times sacct is given and prints are UTC whatever the
controller's zone. Each window starts `overlap_s` before the previous poll began, since an
accounting row changes state after it was first read; the first poll reaches back
`first_window_s`. A poll that fails (the command missing, a non-zero exit, a timeout, output the
reader refuses) leaves the window where it was, so the next poll covers it again.
"""

from __future__ import annotations

import io
import os
import shlex
import subprocess
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from warehouse.errors import WankaError
from warehouse.ingest import ingest_stream
from warehouse.ingest.base import ReadOptions
from warehouse.kernel.engine import Engine

SACCT_FIELDS = (
    "JobID,JobName,User,Account,Partition,QOS,Submit,Eligible,Start,End,Elapsed,State,"
    "ExitCode,DerivedExitCode,AllocNodes,AllocCPUS,AllocTRES,NodeList,Timelimit"
)


class PollFailed(WankaError):
    """A Slurm command that did not give output to ingest."""


@dataclass
class Polled:
    sacct_rows: int
    scontrol_rows: int
    since: datetime


@dataclass
class SlurmPoll:
    """Remembers where the last good poll began; `poll` runs and ingests the commands."""

    sacct: str = "sacct"
    scontrol: str | None = None  # None: no scontrol poll
    overlap_s: float = 300.0
    first_window_s: float = 86_400.0
    timeout_s: float = 120.0
    since: datetime | None = field(default=None)

    def sacct_arguments(self, since: datetime) -> list[str]:
        start = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return [
            *shlex.split(self.sacct),
            "--allusers", "--parsable2", f"--format={SACCT_FIELDS}", f"--starttime={start}",
            "--endtime=now",
        ]  # fmt: skip

    def poll(
        self,
        engine: Engine,
        now: datetime | None = None,
        hold: Callable[[], AbstractContextManager[object]] = nullcontext,
    ) -> Polled:
        """One poll of sacct (and scontrol); raises PollFailed saying which command failed.
        Each ingest runs inside `hold()` (the serve process's write gate), the commands not."""
        now = now or datetime.now(UTC)
        since = (
            self.since - timedelta(seconds=self.overlap_s)
            if self.since is not None
            else now - timedelta(seconds=self.first_window_s)
        )
        stamp = f"{now:%Y-%m-%dT%H:%M:%SZ}"
        out = self._run(self.sacct_arguments(since))
        with hold():
            sacct_rows = self._ingest(engine, "sacct", out, f"sacct poll at {stamp}")
        scontrol_rows = 0
        if self.scontrol is not None:
            text = self._run([*shlex.split(self.scontrol), "show", "job", "-d", "--oneliner"])
            with hold():
                scontrol_rows = self._ingest(engine, "scontrol", text, f"scontrol poll at {stamp}")
        self.since = now
        return Polled(sacct_rows, scontrol_rows, since)

    def _run(self, arguments: list[str]) -> bytes:
        name = arguments[0]
        try:
            done = subprocess.run(
                arguments,
                capture_output=True,
                timeout=self.timeout_s,
                env={**os.environ, "TZ": "UTC"},
                check=False,
            )
        except FileNotFoundError:
            raise PollFailed(f"{name}: command not found") from None
        except subprocess.TimeoutExpired:
            raise PollFailed(f"{name} did not finish within {self.timeout_s:g} s") from None
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise PollFailed(
                f"{name} exited with status {done.returncode}"
                + (f": {said[-1][:300]}" if said else "")
            )
        return done.stdout

    @staticmethod
    def _ingest(engine: Engine, fmt: str, output: bytes, name: str) -> int:
        if not output.strip():
            return 0
        result = ingest_stream(engine, fmt, io.BytesIO(output), name, ReadOptions(timezone="UTC"))
        if result.total_rows == 0 and result.rejected:
            reason = result.first_reject.reason if result.first_reject else "rejected"
            raise PollFailed(f"{fmt} output was refused: {result.rejected} lines, {reason}")
        return result.total_rows
