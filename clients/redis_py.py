#!/usr/bin/python3
"""lockchaos process client: redis-py's redis.lock.Lock, used as its documentation says.

https://redis-py.readthedocs.io/en/stable/lock.html — Lock(redis, name, timeout=...),
acquire(blocking_timeout=...), owned(), release() raising LockNotOwnedError.
Protocol: docs/process-clients.md (JSON lines on stdin/stdout).

Options (environment; the manifests redis-py-no-timeout*.yaml set them, redis-py.yaml none):
LOCKCHAOS_REDIS_PY_NO_TIMEOUT=1: Lock(redis, name) with the library's default timeout=None -- the
  key has no expiry and stays until release() deletes it.
LOCKCHAOS_REDIS_PY_RETRY_RELEASE=1: a release() that fails with a TimeoutError or ConnectionError is
  tried again every 50 ms until the release's timeout_ms, as a caller that must free the lock does.
LOCKCHAOS_REDIS_PY_PR4258=1: redis/redis-py PR #4258's change applied at runtime: release() keeps
  the token when the round trip fails (it clears it only after a release that reached Redis).
"""
import json
import os
import sys
import time

import redis
from redis.exceptions import LockNotOwnedError, LockError, TimeoutError, ConnectionError
from redis.lock import Lock
from redis.sentinel import Sentinel

NO_TIMEOUT = os.environ.get("LOCKCHAOS_REDIS_PY_NO_TIMEOUT") == "1"
RETRY_RELEASE = os.environ.get("LOCKCHAOS_REDIS_PY_RETRY_RELEASE") == "1"

if os.environ.get("LOCKCHAOS_REDIS_PY_PR4258") == "1":
    # redis/redis-py PR #4258 ("fix(lock): preserve token when sync Lock.release() fails"): the
    # token is cleared after a successful release, or on LockNotOwnedError (the key is gone
    # anyway), and kept otherwise, so the caller can release again.
    def _release_pr4258(self):
        expected_token = self.local.token
        if expected_token is None:
            raise LockError("Cannot release an unlocked lock")
        try:
            self.do_release(expected_token)
        except LockNotOwnedError:
            self.local.token = None
            raise
        self.local.token = None

    Lock.release = _release_pr4258


def release(lock, timeout_ms):
    """lock.release(); with RETRY_RELEASE, tried again after a connection error until timeout_ms."""
    deadline = time.monotonic() + timeout_ms / 1000.0
    while True:
        try:
            return lock.release()
        except (TimeoutError, ConnectionError) as e:
            if not RETRY_RELEASE or time.monotonic() + 0.05 >= deadline:
                raise
            sys.stderr.write("release failed (%r); trying again\n" % e)
            sys.stderr.flush()
            time.sleep(0.05)
        except LockError as e:
            if isinstance(e, LockNotOwnedError) or not RETRY_RELEASE:
                raise
            # A retry after a failed round trip: redis-py 4.3.4 cleared the token before it,
            # so it refuses, and the key it could not delete stays (redis-py PR #4258).
            sys.stderr.write("release retried: %s (the key stays)\n" % e)
            sys.stderr.flush()
            raise TimeoutError("release failed, and retrying it raised LockError: %s" % e)


class RoutedSentinel(Sentinel):
    """redis-py's Sentinel whose master address goes through this client's proxy.

    Sentinel names the master by its real address; init's `routes` maps it to this client's
    proxy for that server (docs/process-clients.md, Sentinel), so the faults on this client's
    links reach its connection to the master too.
    """

    def __init__(self, routes, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.routes = routes

    def discover_master(self, service_name):
        host, port = super().discover_master(service_name)
        to = self.routes.get("%s:%s" % (host, port))
        if to is None:
            return host, port
        h, p = to.rsplit(":", 1)
        return h, int(p)


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


lock = None
for line in sys.stdin:
    m = json.loads(line)
    rid, kind = m["id"], m["type"]
    try:
        if kind == "init":
            ttl = m["ttl_ms"] / 1000.0
            # socket_timeout: without it a black-holed server blocks a call forever.
            timeouts = dict(socket_timeout=max(ttl / 4, 0.1), socket_connect_timeout=max(ttl / 4, 0.1))
            if m.get("sentinel_master"):
                # redis-sentinel: the master Sentinel names, reached through this client's proxy.
                sentinels = [tuple(a.rsplit(":", 1)) for a in m["sentinels"]]
                r = RoutedSentinel(m.get("routes") or {}, sentinels, sentinel_kwargs=timeouts,
                                   **timeouts).master_for(m["sentinel_master"])
            else:
                host, port = m["nodes"][0].rsplit(":", 1)
                r = redis.Redis(host=host, port=int(port), **timeouts)
            # redis.lock.Lock, thread_local=True
            lock = r.lock(m["lock"]) if NO_TIMEOUT else r.lock(m["lock"], timeout=ttl)
            lease_ms = 0 if NO_TIMEOUT else int(ttl * 1000)
            send({"in_reply_to": rid, "type": "init_ok", "name": "redis-py %s Lock" % redis.__version__})
        elif kind == "acquire":
            if lock.acquire(blocking=True, blocking_timeout=m["timeout_ms"] / 1000.0):
                send({"in_reply_to": rid, "type": "ok", "validity_ms": lease_ms, "ttl_ms": lease_ms})
            else:
                send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite"})
        elif kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": bool(lock.owned())})
        elif kind == "release":
            release(lock, m.get("timeout_ms", 1000))
            send({"in_reply_to": rid, "type": "ok"})
    except LockNotOwnedError as e:
        send({"in_reply_to": rid, "type": "fail", "code": "not_held", "text": str(e)})
    except (TimeoutError, ConnectionError) as e:
        if kind == "valid":  # a read: it changed nothing, and the library cannot say it holds
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:
            send({"in_reply_to": rid, "type": "info", "code": "timeout", "text": repr(e)})
    except LockError as e:
        # release() without a token (the acquire it follows did not succeed locally)
        send({"in_reply_to": rid, "type": "fail", "code": "not_held", "text": str(e)})
