#!/usr/bin/python3
"""lockchaos process client: redis-py's redis.lock.Lock, used as its documentation says.

https://redis-py.readthedocs.io/en/stable/lock.html — Lock(redis, name, timeout=...),
acquire(blocking_timeout=...), owned(), release() raising LockNotOwnedError.
Protocol: docs/process-clients.md (JSON lines on stdin/stdout).
"""
import json
import sys

import redis
from redis.exceptions import LockNotOwnedError, LockError, TimeoutError, ConnectionError


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
            ttl = m["ttl_ms"] / 1000.0
            # socket_timeout: without it a black-holed server blocks a call forever.
            r = redis.Redis(host=host, port=int(port), socket_timeout=max(ttl / 4, 0.1),
                            socket_connect_timeout=max(ttl / 4, 0.1))
            lock = r.lock(m["lock"], timeout=ttl)  # redis.lock.Lock, thread_local=True
            send({"in_reply_to": rid, "type": "init_ok", "name": "redis-py %s Lock" % redis.__version__})
        elif kind == "acquire":
            if lock.acquire(blocking=True, blocking_timeout=m["timeout_ms"] / 1000.0):
                send({"in_reply_to": rid, "type": "ok", "validity_ms": int(ttl * 1000), "ttl_ms": int(ttl * 1000)})
            else:
                send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite"})
        elif kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": bool(lock.owned())})
        elif kind == "release":
            lock.release()
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
