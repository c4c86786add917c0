#!/usr/bin/python3
"""lockchaos process client: kazoo's Lock recipe, used as its documentation says.

https://kazoo.readthedocs.io/en/latest/api/recipe/lock.html — client.Lock(path, identifier),
acquire(timeout=...), release(), is_acquired.
https://kazoo.readthedocs.io/en/latest/basic_usage.html#understanding-kazoo-connections — a
lock holder watches the connection state: on SUSPENDED it must not assume it holds the lock,
on LOST (session expired) the lock is gone.
Protocol: docs/process-clients.md.

LOCKCHAOS_KAZOO_NONBLOCKING=1 (manifest kazoo-nonblocking): an acquire polls instead of waiting,
as code that tries a lock and comes back later does (Zuul's locked(lock, blocking=False)): every
try is a new zk.Lock(path, identifier).acquire(blocking=False), repeated every 20 ms until the
acquire's timeout_ms. A try that finds a predecessor deletes its contender node again
(Lock._best_effort_cleanup) -- unless that delete fails, kazoo #732.
LOCKCHAOS_KAZOO_PR760=1 applies python-zk/kazoo PR #760's change at runtime: that cleanup delete is
retried until it succeeds instead of being given up at the first KazooException.
"""
import json
import logging
import os
import sys
import threading
import time

import kazoo
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout, KazooException, NoNodeError
from kazoo.recipe.lock import Lock as KazooLock

NONBLOCKING = os.environ.get("LOCKCHAOS_KAZOO_NONBLOCKING") == "1"

if os.environ.get("LOCKCHAOS_KAZOO_PR760") == "1":
    # python-zk/kazoo PR #760 ("recipe(lock): retry lock cleanup"): delete the contender node
    # under the lock's own retry (forever, ignoring the acquire's timeout), not best effort.
    def _retried_cleanup(self):
        def cleanup():
            node = self.node or self._find_node()
            if node:
                try:
                    self._delete_node(node)
                except NoNodeError:
                    pass
        retry = self._retry.copy()
        retry.deadline = None
        retry(cleanup)

    KazooLock._best_effort_cleanup = _retried_cleanup

out = threading.Lock()

# The lease of a ZooKeeper lock is the session: ttl_ms is the session timeout the server granted
# (docs/process-clients.md), which kazoo logs at its BLATHER level ("negotiated session timeout").
granted_session_ms = None


class _Negotiated(logging.Handler):
    def emit(self, record):
        global granted_session_ms
        if isinstance(record.msg, str) and record.msg.startswith("Session created") and len(record.args) >= 3:
            granted_session_ms = int(record.args[2])


_h = _Negotiated()
_h.setLevel(1)
_lg = logging.getLogger("kazoo")
_lg.setLevel(1)
_lg.addHandler(_h)
_lg.propagate = False
_w = logging.StreamHandler(sys.stderr)  # kazoo's own warnings still reach stderr
_w.setLevel(logging.WARNING)
_lg.addHandler(_w)


def send(msg):
    with out:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def on_state(state):
    # Called from kazoo's connection thread.
    if state == KazooState.LOST and lock is not None and lock.is_acquired:
        send({"type": "lost", "text": "session lost (KazooState.LOST)"})


def session_ms():
    """The session timeout the server granted, else the one asked for."""
    return granted_session_ms or requested_session_ms


zk = lock = None
requested_session_ms = 0
for line in sys.stdin:
    m = json.loads(line)
    rid, kind = m["id"], m["type"]
    try:
        if kind == "init":
            ttl_ms = m["ttl_ms"]
            requested_session_ms = m["session_timeout_ms"]
            zk = KazooClient(hosts=",".join(m["nodes"]), timeout=m["session_timeout_ms"] / 1000.0)
            if "LOCKCHAOS_KAZOO_NO_LISTENER" not in os.environ:
                zk.add_listener(on_state)
            zk.start(timeout=15)
            path, ident = "/lockchaos-kazoo/" + m["lock"], "client-%d" % m["client"]
            lock = zk.Lock(path, ident)
            send({"in_reply_to": rid, "type": "init_ok", "name": "kazoo %s Lock" % kazoo.version.__version__})
        elif kind == "acquire" and NONBLOCKING:
            deadline = time.monotonic() + m["timeout_ms"] / 1000.0
            while True:
                attempt = zk.Lock(path, ident)
                if attempt.acquire(blocking=False):
                    lock = attempt
                    break
                if time.monotonic() >= deadline:
                    raise LockTimeout("lock busy at every non-blocking try")
                time.sleep(0.02)
            send({"in_reply_to": rid, "type": "ok", "validity_ms": 0, "ttl_ms": session_ms()})
        elif kind == "acquire":
            lock.acquire(timeout=m["timeout_ms"] / 1000.0)
            # The lock is held until release or the session's loss: its lease is the session.
            send({"in_reply_to": rid, "type": "ok", "validity_ms": 0, "ttl_ms": session_ms()})
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
