"""Prometheus 2.42 rule files evaluated over the warehouse, as Prometheus evaluates them.

`rulefile` reads a rule file as Prometheus's rulefmt does (strict keys, every rule checked,
errors worded as `promtool check rules` prints them); `expressions` parses a rule's PromQL as
2.42 does and names the metrics it reads; `gotemplate` is Go's text/template with Prometheus's
functions, for labels and annotations; `durations` Prometheus's durations.

`group` evaluates a group at one timestamp (rules in order, each one's output stored before the
next, staleness markers, health), `alerts` is an alerting rule's state machine (pending, firing,
`keep_firing_for`, resolved, what is due to Alertmanager), `store` where both read (PromQL) and
write (the telemetry store's append). `testfile`, `series_notation` and `testrun` are
`promtool test rules`: its file format, its expanding notation, its evaluation and messages.
"""
