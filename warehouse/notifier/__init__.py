"""Alerts sent to Alertmanager as Prometheus 2.42's `notifier/` sends them: `POST
/api/v2/alerts` to every configured Alertmanager, a bounded queue between the rule evaluation
and the sending (evaluation never waits on an Alertmanager), the oldest alerts dropped when it
is full, and every drop, send and error counted under Prometheus's metric names.

`payload` turns an alert into Alertmanager's JSON (external labels added, `startsAt` the firing
time, `endsAt` the resolution or the time it stays valid, `generatorURL`); `queue` is the queue
and its sending thread.
"""
