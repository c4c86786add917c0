#!/usr/bin/python3
"""lockchaos process client: kazoo's Lock recipe, used as its documentation says.

https://kazoo.readthedocs.io/en/latest/api/recipe/lock.html — client.Lock(path, identifier),
acquire(timeout=...), release(), is_acquired.
https://kazoo.readthedocs.io/en/latest/basic_usage.html#understanding-kazoo-connections — a
lock holder watches the connection state: on SUSPENDED it must not assume it holds the lock,
on LOST (session expired) the lock is gone.
Protocol: docs/process-clients.md.
"""
import json
import os
import sys
import threading

import kazoo
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout, KazooException

out = threading.Lock()


def send(msg):
    with out:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def on_state(state):
    # Called from kazoo's connection thread.
    if state == KazooState.LOST and lock is not None and lock.is_acquired:
        send({"type": "lost", "text": "session lost (KazooState.LOST)"})


zk = lock = None
for line in sys.stdin:
    m = json.loads(line)
    rid, kind = m["id"], m["type"]
    try:
        if kind == "init":
            ttl_ms = m["ttl_ms"]
            zk = KazooClient(hosts=",".join(m["nodes"]), timeout=m["session_timeout_ms"] / 1000.0)
            if "LOCKCHAOS_KAZOO_NO_LISTENER" not in os.environ:
                zk.add_listener(on_state)
            zk.start(timeout=15)
            lock = zk.Lock("/lockchaos-kazoo/" + m["lock"], "client-%d" % m["client"])
            send({"in_reply_to": rid, "type": "init_ok", "name": "kazoo %s Lock" % kazoo.version.__version__})
        elif kind == "acquire":
            lock.acquire(timeout=m["timeout_ms"] / 1000.0)
            # ZooKeeper locks have no TTL: the lock is held until release or session loss.
            send({"in_reply_to": rid, "type": "ok", "validity_ms": 0, "ttl_ms": 0})
        elif kind == "valid":
            send({"in_reply_to": rid, "type": "ok",
                  "held": bool(lock.is_acquired and zk.state == KazooState.CONNECTED)})
        elif kind == "release":
            if lock.release():
                send({"in_reply_to": rid, "type": "ok"})
            else:
                send({"in_reply_to": rid, "type": "fail", "code": "not_held"})
    except LockTimeout as e:
        send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite", "text": str(e)})
    except KazooException as e:
        if kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:
            send({"in_reply_to": rid, "type": "info", "code": "connection_lost", "text": repr(e)})
