"""Prometheus 2.42 rule files evaluated over the warehouse, as Prometheus evaluates them.

`rulefile` reads a rule file as Prometheus's rulefmt does (strict keys, every rule checked,
errors worded as `promtool check rules` prints them); `expressions` parses a rule's PromQL as
2.42 does and names the metrics it reads; `gotemplate` is Go's text/template with Prometheus's
functions, for labels and annotations; `durations` Prometheus's durations.
"""
