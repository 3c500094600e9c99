"""The refresh plans: one small frozen type per strategy, kept as versioned JSON.

A plan holds the queries the planner built from sqlglot trees (`$lo`/`$hi` bind the window of
new batch ids); `warehouse.dynamic.dml` wraps them in the statements a refresh runs. The union is
closed: a refresh matches on the type, and mypy checks every kind is handled.

- `Full`: the query, recomputed whole, and why nothing better was possible;
- `Append`: a filter/projection (or inner-join projection) over inserts: its delta;
- `Aggregate`: decomposable aggregates per key, kept in a state table the delta is merged into;
- `Groups`: anything else group-shaped: the affected groups are recomputed.

Version 2 is this layout. Version 1 (no "version" key: one record with a string `kind` and
optional SQL fields, as wanka wrote before typed plans) still loads, field for field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from warehouse.errors import WankaError

VERSION = 2


@dataclass(frozen=True)
class Recompute:
    """How to recompute the groups that changed rows belong to (the queries bind $lo/$hi)."""

    affected: str  # one row per affected group: its keys as k0, k1, ...
    groups: str  # the query (groups plans) or the state (aggregate plans), those groups only
    bounds: str  # how many groups are affected, and k<i>_lo/k<i>_hi of time-bucket keys


@dataclass(frozen=True)
class Full:
    """Recompute the whole query every refresh."""

    sources: tuple[str, ...]
    query: str
    reason: str
    kind: ClassVar[str] = "full"
    key_positions: ClassVar[tuple[int, ...]] = ()


@dataclass(frozen=True)
class Append:
    """Insert the query's rows over the newly inserted rows."""

    sources: tuple[str, ...]
    query: str
    delta: str
    kind: ClassVar[str] = "append"
    reason: ClassVar[None] = None
    key_positions: ClassVar[tuple[int, ...]] = ()


@dataclass(frozen=True)
class Groups:
    """Recompute the groups of changed rows; `fact_only` when only the first table changed."""

    sources: tuple[str, ...]
    query: str
    key_positions: tuple[int, ...]  # where each GROUP BY key is among the query's columns
    recompute: Recompute
    fact_only: Recompute | None = None  # a join: the branches of the fact table alone
    kind: ClassVar[str] = "groups"
    reason: ClassVar[None] = None


@dataclass(frozen=True)
class Aggregate:
    """Merge the pre-aggregated delta into a per-key state; rewrite the touched groups' rows."""

    sources: tuple[str, ...]
    query: str
    key_positions: tuple[int, ...]
    state: str  # the state over all rows: keys k0.., __rows, one or two columns per aggregate
    delta: str  # the state over the delta only, one row per key
    merge: str  # MERGE of the delta into the state table (__wm = $hi on touched groups)
    visible: str  # the query's rows of the groups whose __wm is $hi, read from the state
    recompute: Recompute | None = None  # after updates/deletes; None in plans before 0007
    kind: ClassVar[str] = "aggregate"
    reason: ClassVar[None] = None


Plan = Full | Append | Groups | Aggregate


def to_json(plan: Plan) -> dict[str, Any]:
    """The plan as stored in wanka.dynamic_tables.plan (version 2)."""
    data: dict[str, Any] = {"version": VERSION, "kind": plan.kind, "sources": list(plan.sources)}
    data["query"] = plan.query
    data["key_positions"] = list(plan.key_positions)  # also read by the lake's definitions
    if isinstance(plan, Full):
        data["reason"] = plan.reason
    elif isinstance(plan, Append):
        data["delta"] = plan.delta
    elif isinstance(plan, Groups):
        data["recompute"] = _recompute_json(plan.recompute)
        data["fact_only"] = _recompute_json(plan.fact_only)
    else:
        data.update(state=plan.state, delta=plan.delta, merge=plan.merge)
        data["visible"] = plan.visible
        data["recompute"] = _recompute_json(plan.recompute)
    return data


def from_json(data: dict[str, Any]) -> Plan:
    """A stored plan of any version this wanka knows."""
    version = data.get("version", 1)
    if version == 1:
        return _from_v1(data)
    if version != VERSION:
        raise WankaError(
            f"a dynamic table's plan has version {version}; this wanka knows up to {VERSION}"
        )
    sources, query, kind = tuple(data["sources"]), str(data["query"]), data["kind"]
    keys = tuple(int(p) for p in data.get("key_positions") or ())
    if kind == "full":
        return Full(sources, query, str(data["reason"]))
    if kind == "append":
        return Append(sources, query, str(data["delta"]))
    recompute = _recompute(data.get("recompute"))
    if kind == "groups":
        assert recompute is not None, "a groups plan always says how to recompute"
        return Groups(sources, query, keys, recompute, _recompute(data.get("fact_only")))
    if kind == "aggregate":
        return Aggregate(
            sources,
            query,
            keys,
            str(data["state"]),
            str(data["delta"]),
            str(data["merge"]),
            str(data["visible"]),
            recompute,
        )
    raise WankaError(f"a dynamic table's plan has an unknown kind {kind!r}")


def _recompute_json(recompute: Recompute | None) -> dict[str, str] | None:
    if recompute is None:
        return None
    return {"affected": recompute.affected, "groups": recompute.groups, "bounds": recompute.bounds}


def _recompute(data: dict[str, str] | None) -> Recompute | None:
    if not data:
        return None
    return Recompute(data["affected"], data["groups"], data["bounds"])


def _from_v1(data: dict[str, Any]) -> Plan:
    """The one-record layout: kind plus optional *_sql fields, fact_only as a dict."""
    sources, query = tuple(data["sources"]), str(data["query"])
    keys = tuple(int(p) for p in data.get("key_positions") or ())
    recompute = None
    if data.get("affected_sql") and data.get("groups_sql") and data.get("bounds_sql"):
        recompute = Recompute(data["affected_sql"], data["groups_sql"], data["bounds_sql"])
    kind = data["kind"]
    if kind == "append":
        return Append(sources, query, str(data["delta_sql"]))
    if kind == "groups" and recompute is not None:
        only = data.get("fact_only") or {}
        fact_only = None
        if only:
            fact_only = Recompute(only["affected_sql"], only["groups_sql"], only["bounds_sql"])
        return Groups(sources, query, keys, recompute, fact_only)
    if kind == "aggregate":
        return Aggregate(
            sources,
            query,
            keys,
            str(data["state_sql"]),
            str(data["delta_sql"]),
            str(data["merge_sql"]),
            str(data["visible_sql"]),
            recompute,
        )
    reason = data.get("reason") or "a plan stored before its kind could be recomputed"
    return Full(sources, query, str(reason))
