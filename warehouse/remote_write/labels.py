"""A Prometheus series' labels as gpu_metrics columns, and back, exactly.

A DCGM series (`__name__` starting `DCGM_`) with a host goes to gpu_metrics:

| label                | column | kept in `labels` too?                                     |
|----------------------|--------|-----------------------------------------------------------|
| `__name__`           | metric | no                                                        |
| `Hostname`           | host   | no                                                        |
| `instance` (no `Hostname`) | host: the instance without its port | yes (as sent)  |
| `gpu` (a plain integer) | gpu | no; any other text stays in `labels`                      |
| `UUID`               | uuid   | no                                                        |
| `modelName`          | model: the short name (`models.ModelNames`) | yes (as sent)     |
| any other            | –      | yes: `instance`, `job`, `pod`, `hpc_job`, `GPU_I_ID`, ... |

When the host came from `instance`, `labels` says so with the key `__host__` (Prometheus
reserves names starting `__`, so no real label has it), and `rebuild` knows not to add a
`Hostname`. Every other series goes to prom_samples with all its labels but `__name__`.
`rebuild` gives back exactly the labels that arrived.
"""

from __future__ import annotations

import json
import re

from warehouse.ingest.models import ModelNames

#: One encoder for every label set (json.dumps with options builds an encoder per call).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
HOST_FROM = "__host__"  # in `labels`: the host column came from this label, not Hostname
_PLAIN_INT = re.compile(r"0|[1-9][0-9]{0,9}")
_PORT = re.compile(r"^(?:\[(?P<v6>[^\]]*)\]|(?P<host>[^:]*))(?::[0-9]+)?$")


def is_dcgm(metric: str) -> bool:
    return metric.startswith("DCGM_")


def host_of_instance(instance: str) -> str:
    """The host part of a Prometheus `instance` (host:port, [v6]:port, or a bare host).

    >>> host_of_instance("node1:9400"), host_of_instance("[fe80::1]:9400"), host_of_instance("n2")
    ('node1', 'fe80::1', 'n2')
    """
    found = _PORT.match(instance)
    if found is None:
        return instance
    return found["v6"] if found["v6"] is not None else found["host"] or instance


def labels_json(pairs: dict[str, str]) -> str | None:
    """The JSON object of `pairs`, keys sorted (one text per label set), or None when empty.

    >>> labels_json({"job": "dcgm", "instance": "n1:9400"})
    '{"instance":"n1:9400","job":"dcgm"}'
    """
    if not pairs:
        return None
    return _ENCODE(dict(sorted(pairs.items())))


#: (host, gpu, uuid, model, labels JSON) of a DCGM series.
GpuColumns = tuple[str, "int | None", "str | None", "str | None", "str | None"]


def gpu_columns(labels: dict[str, str], models: ModelNames) -> GpuColumns | None:
    """The gpu_metrics columns of a DCGM series' labels (without `__name__`), or None when it
    names no host (it then goes to prom_samples)."""
    rest = dict(labels)
    host = rest.pop("Hostname", None)
    if host is None:
        instance = labels.get("instance")
        if not instance:
            return None
        host = host_of_instance(instance)
        rest[HOST_FROM] = "instance"
    gpu_text = rest.get("gpu")
    gpu = None
    if gpu_text is not None and _PLAIN_INT.fullmatch(gpu_text) and int(gpu_text) < 2**31:
        gpu = int(rest.pop("gpu"))
    uuid = rest.pop("UUID", None)
    model = labels.get("modelName")
    return host, gpu, uuid, models.short(model) if model else None, labels_json(rest)


def rebuild(
    metric: str, host: str | None, gpu: int | None, uuid: str | None, labels: str | None
) -> dict[str, str]:
    """The labels a stored series arrived with, from its gpu_metrics columns (`host` None for a
    prom_samples series).

    >>> sorted(rebuild("DCGM_FI_DEV_GPU_UTIL", "n1", 0, "GPU-1", '{"instance":"n1:9400"}'))
    ['Hostname', 'UUID', '__name__', 'gpu', 'instance']
    """
    out = {"__name__": metric}
    extra = json.loads(labels) if labels else {}
    from_label = extra.pop(HOST_FROM, None)
    out.update(extra)
    if host is not None and from_label is None:
        out["Hostname"] = host
    if gpu is not None:
        out["gpu"] = str(gpu)
    if uuid is not None:
        out["UUID"] = uuid
    return out
