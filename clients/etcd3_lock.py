#!/usr/bin/python3
"""lockchaos process client: python-etcd3's Lock, used as its documentation says.

https://python-etcd3.readthedocs.io/en/latest/usage.html#locks — client.lock(name, ttl),
acquire(timeout=...), is_acquired(), release(). The lock is a key on a lease of `ttl` whole
seconds that nobody refreshes unless the holder calls refresh(); python-etcd3 0.12 takes one
endpoint, so the client talks to the first node only.
Protocol: docs/process-clients.md.
"""
import json
import math
import sys

import etcd3
from etcd3 import exceptions


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


lock = None
for line in sys.stdin:
    m = json.loads(line)
    rid, kind = m["id"], m["type"]
    try:
        if kind == "init":
            host, port = m["nodes"][0].rsplit(":", 1)
            ttl = max(1, math.ceil(m["ttl_ms"] / 1000.0))  # the lease TTL is whole seconds
            client = etcd3.client(host=host, port=int(port), timeout=max(m["ttl_ms"] / 4000.0, 0.25))
            lock = client.lock(m["lock"], ttl=ttl)
            send({"in_reply_to": rid, "type": "init_ok", "name": "python-etcd3 %s Lock" % etcd3.__version__})
        elif kind == "acquire":
            if lock.acquire(timeout=m["timeout_ms"] / 1000.0):
                send({"in_reply_to": rid, "type": "ok", "validity_ms": ttl * 1000, "ttl_ms": ttl * 1000})
            else:
                send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite"})
        elif kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": bool(lock.is_acquired())})
        elif kind == "release":
            if lock.release():
                send({"in_reply_to": rid, "type": "ok"})
            else:
                send({"in_reply_to": rid, "type": "fail", "code": "not_held"})
    except exceptions.Etcd3Exception as e:
        if kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:
            send({"in_reply_to": rid, "type": "info", "code": "connection_lost", "text": repr(e)})
