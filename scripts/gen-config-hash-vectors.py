#!/usr/bin/env python3
"""Writes clients/vectors/config_hash.json: operator chains built with the real 2.x Python SDK
(queen-mq 2.6.0, installed in build/venv by scripts/install-deps.sh) and the config_hash it gives
each, so every SDK in clients/ can check that it registers a chain under the same hash.
Run: build/venv/bin/python scripts/gen-config-hash-vectors.py > clients/vectors/config_hash.json
Each vector: the chain as neutral steps (op + options, the way an SDK's builder is called;
`eventTime: true` stands for an extractor function),
the canonical JSON the hash is taken of, and the hash."""
import json
import sys

from queen.streams import Stream
from queen.streams.util.config_hash import config_hash_of, _describe


class _Q:
    def __init__(self, name):
        self.name = name
        self.queue_name = name
        self._name = name


def opts(a):
    # eventTime true in a step means "an event-time extractor is given" (the SDKs take a function)
    a = dict(a)
    if a.get("eventTime") is True:
        a["eventTime"] = lambda m: 0
    return a


def build(steps):
    s = Stream.from_(_Q("src"))
    for st in steps:
        op, a = st["op"], st.get("args", {})
        if op == "map":
            s = s.map(lambda m: m)
        elif op == "filter":
            s = s.filter(lambda m: True)
        elif op == "flatMap":
            s = s.flat_map(lambda m: [m])
        elif op == "keyBy":
            s = s.key_by(lambda m: "k")
        elif op == "windowTumbling":
            s = s.window_tumbling(**opts(a))
        elif op == "windowSliding":
            s = s.window_sliding(**opts(a))
        elif op == "windowSession":
            s = s.window_session(**opts(a))
        elif op == "windowCron":
            s = s.window_cron(**opts(a))
        elif op == "aggregate":
            s = s.aggregate({f: (lambda m: 1) for f in a["fields"]})
        elif op == "reduce":
            s = s.reduce(lambda acc, m: acc, a.get("initial"))
        elif op == "gate":
            s = s.gate(lambda m, ctx: True)
        elif op == "to":
            s = s.to(_Q(a["queue"]))
        elif op == "foreach":
            s = s.foreach(lambda v: None)
        else:
            raise SystemExit("unknown op " + op)
    return s


CHAINS = [
    [{"op": "windowTumbling", "args": {"seconds": 2}}, {"op": "aggregate", "args": {"fields": ["count", "sum"]}}, {"op": "to", "args": {"queue": "sink"}}],
    [{"op": "windowTumbling", "args": {"seconds": 60, "eventTime": True, "gracePeriod": 5, "allowedLateness": 10, "onLate": "include"}}, {"op": "aggregate", "args": {"fields": ["count", "sum", "min", "max", "avg"]}}, {"op": "to", "args": {"queue": "out"}}],
    [{"op": "map"}, {"op": "filter"}, {"op": "keyBy"}, {"op": "windowSliding", "args": {"size": 10, "slide": 5}}, {"op": "reduce", "args": {"initial": 0}}, {"op": "to", "args": {"queue": "sliding.out"}}],
    [{"op": "keyBy"}, {"op": "windowSession", "args": {"gap": 30}}, {"op": "aggregate", "args": {"fields": ["count"]}}, {"op": "foreach"}],
    [{"op": "windowCron", "args": {"every": "minute"}}, {"op": "reduce"}, {"op": "to", "args": {"queue": "cron-out"}}],
    [{"op": "windowCron", "args": {"every": "day", "idleFlushMs": 0}}, {"op": "aggregate", "args": {"fields": ["sum"]}}, {"op": "to", "args": {"queue": "daily"}}],
    [{"op": "keyBy"}, {"op": "gate"}, {"op": "to", "args": {"queue": "gated"}}],
    [{"op": "flatMap"}, {"op": "map"}, {"op": "foreach"}],
    [{"op": "windowTumbling", "args": {"seconds": 1, "idleFlushMs": 500}}, {"op": "aggregate", "args": {"fields": ["count", "sum"]}}, {"op": "to", "args": {"queue": "dünne-queue"}}],
]


def main():
    out = []
    for steps in CHAINS:
        s = build(steps)
        ops = s._operators
        canonical = json.dumps([_describe(o) for o in ops], separators=(",", ":"), ensure_ascii=False)
        out.append({"steps": steps, "canonical": canonical, "config_hash": config_hash_of(ops)})
    json.dump({"generator": "queen-mq 2.6.0 queen.streams.util.config_hash (scripts/gen-config-hash-vectors.py)",
               "vectors": out}, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


main()
