#!/usr/bin/python3
"""A process client for the clock tests: seed 000's timestamp lock, in Python on redis-py. The key
holds the holder's expiry by its own wall clock (time.time() + TTL), with no server expiry; a waiter
that finds the stored expiry past by *its* clock takes the lock over with GETSET, and wins if it
got back the value it saw. Correct while the clients' clocks agree; a client whose clock runs
ahead takes over a lock whose holder is still inside its lease."""
import json, sys, time, redis

def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()

for line in sys.stdin:
    m = json.loads(line)
    rid, kind = m["id"], m["type"]
    try:
        if kind == "init":
            host, port = m["nodes"][0].rsplit(":", 1)
            ttl, key = m["ttl_ms"] / 1000.0, m["lock"]
            r = redis.Redis(host=host, port=int(port), socket_timeout=0.2, socket_connect_timeout=0.2)
            send({"in_reply_to": rid, "type": "init_ok", "name": "timestamp lock (redis-py)"})
        elif kind == "acquire":
            deadline, mine = time.monotonic() + m["timeout_ms"] / 1000.0, None
            while mine is None and time.monotonic() < deadline:
                exp = "%.6f" % (time.time() + ttl)
                if r.set(key, exp, nx=True):
                    mine = exp
                    break
                seen = r.get(key)
                if seen is not None and float(seen) < time.time() and r.getset(key, exp) == seen:
                    mine = exp
                    break
                time.sleep(0.01)
            if mine is None:
                send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite"})
            else:
                send({"in_reply_to": rid, "type": "ok", "validity_ms": int(ttl * 1000)})
        elif kind == "release":
            if mine is not None and r.get(key) == mine.encode():
                r.delete(key)
                send({"in_reply_to": rid, "type": "ok"})
            else:
                send({"in_reply_to": rid, "type": "fail", "code": "not_held"})
            mine = None
    except redis.exceptions.RedisError as e:
        send({"in_reply_to": rid, "type": "info", "code": "connection_lost", "text": repr(e)})
