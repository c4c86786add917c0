#!/usr/bin/python3
"""lockchaos process client: a Redis lock written as a user writes it with redis-py's raw commands.

Not redis-py's Lock class: SET key token NX PX ttl in a retry loop with jittered sleeps of
5-20 ms, the holder's validity TTL - drift counted from when acquire was asked (drift = TTL/100
+ 2 ms), release by the Lua compare-and-delete (EVAL). `valid` answers from the client's own
validity, without asking the server. It marks no named point: faults reach it through its
connection (the proxy in `nodes`) and its process only.

--bug picks one classic mistake (the correct lock is --bug none):
  get-del              release by GET, compare in the client, then DEL (two commands)
  no-validity          validity_ms 0: the holder trusts the lease until it releases
  validity-from-reply  the full TTL counted from when the SET's reply arrived

Protocol: docs/process-clients.md (JSON lines on stdin/stdout).
"""
import argparse
import json
import os
import random
import sys
import time

import redis
from redis.exceptions import ConnectionError, RedisError, TimeoutError

RELEASE = """if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end"""

BUGS = ["none", "get-del", "no-validity", "validity-from-reply", "setnx-expire"]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def take(r, key, tok, ttl_ms, bug):
    """SET key tok NX PX ttl; with --bug setnx-expire, SETNX then PEXPIRE as two commands (seed
    002's problem 1: a client that dies between them leaves a key that never expires)."""
    if bug != "setnx-expire":
        return r.set(key, tok, nx=True, px=ttl_ms)
    if not r.setnx(key, tok):
        return False
    r.pexpire(key, ttl_ms)
    return True


def remap_cluster(routes):
    """Route every node redis-py's cluster client learns of through this client's proxy for it.

    A cluster names its nodes by their real addresses (CLUSTER SLOTS, MOVED, ASK); a client that
    connected to those would bypass the proxies the faults act on. redis-py 5's RedisCluster takes
    address_remap for this; Debian's redis-py 4.3.4 has none, so every ClusterNode is built with
    init's `routes` (real -> proxied) applied, which is what address_remap does.
    """
    from redis import cluster

    orig = cluster.ClusterNode.__init__

    def init(self, host, port, *args, **kwargs):
        to = routes.get("%s:%s" % (host, port))
        if to is not None:
            host, port = to.rsplit(":", 1)
            port = int(port)
        orig(self, host, port, *args, **kwargs)

    cluster.ClusterNode.__init__ = init


def connect(m, op):
    """A client for init message m: one Redis, or on redis-cluster redis-py's RedisCluster."""
    if m.get("topology") == "redis-cluster":
        from redis.cluster import ClusterNode, RedisCluster
        remap_cluster(m.get("routes") or {})
        nodes = [ClusterNode(*(lambda h, p: (h, int(p)))(*n.rsplit(":", 1))) for n in m["nodes"]]
        return RedisCluster(startup_nodes=nodes, socket_timeout=op, socket_connect_timeout=op)
    host, port = m["nodes"][0].rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), socket_timeout=op, socket_connect_timeout=op)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bug", choices=BUGS, default="none")
    bug = ap.parse_args().bug

    r = key = ttl_ms = None
    token = None  # the held lease's token, None when not held
    until = None  # monotonic time the held lease is trusted until; None = until released
    for line in sys.stdin:
        m = json.loads(line)
        rid, kind = m["id"], m["type"]
        step = kind
        try:
            if kind == "init":
                ttl_ms, key = m["ttl_ms"], m["lock"]
                # A timeout, so a black-holed server cannot block a call for ever; a few TTLs, as a
                # user sets one (redis-py's default is none at all): a reply that comes late still
                # comes, and the lock's own validity rule decides what a late grant is worth.
                op = max(4 * ttl_ms / 1000.0, 1.0)
                r = connect(m, op)
                name = "userlock (redis-py %s: SET NX PX, EVAL compare-and-delete)" % redis.__version__
                if bug != "none":
                    name += " --bug " + bug
                send({"in_reply_to": rid, "type": "init_ok", "name": name})
            elif kind == "acquire":
                called = time.monotonic()
                deadline = called + m["timeout_ms"] / 1000.0
                tok = os.urandom(16).hex()
                step = "SET NX PX"
                while not take(r, key, tok, ttl_ms, bug):
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(random.uniform(0.005, 0.020))
                else:
                    token, now = tok, time.monotonic()
                    drift = ttl_ms / 100.0 + 2
                    if bug == "no-validity":
                        validity, until = 0, None
                    elif bug == "validity-from-reply":
                        # a full TTL from the reply; validity_ms counts from when acquire was asked
                        validity, until = ttl_ms + (now - called) * 1000, now + ttl_ms / 1000.0
                    else:
                        validity = ttl_ms - drift
                        until = called + validity / 1000.0
                    send({"in_reply_to": rid, "type": "ok", "fence": 0,
                          "validity_ms": int(validity), "ttl_ms": ttl_ms})
                    continue
                send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite"})
            elif kind == "valid":
                held = token is not None and (until is None or time.monotonic() < until)
                send({"in_reply_to": rid, "type": "ok", "held": held})
            elif kind == "release":
                tok, token, until = token, None, None
                if tok is None:
                    send({"in_reply_to": rid, "type": "fail", "code": "not_held", "text": "no lease"})
                elif bug == "get-del":
                    step = "GET"
                    if r.get(key) != tok.encode():
                        send({"in_reply_to": rid, "type": "fail", "code": "not_held",
                              "text": "the key holds another token"})
                        continue
                    step = "DEL"
                    if r.delete(key) == 1:
                        send({"in_reply_to": rid, "type": "ok"})
                    else:
                        send({"in_reply_to": rid, "type": "fail", "code": "not_held", "text": "no key to delete"})
                else:
                    step = "EVAL compare-and-delete"
                    if r.eval(RELEASE, 1, key, tok) == 1:
                        send({"in_reply_to": rid, "type": "ok"})
                    else:
                        send({"in_reply_to": rid, "type": "fail", "code": "not_held",
                              "text": "the key holds another token"})
        except (TimeoutError, ConnectionError) as e:
            if step == "GET":  # a read changed nothing: the release definitely did not happen
                send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite", "text": "GET: %r" % e})
            else:  # a write that may have reached the server
                code = "timeout" if isinstance(e, TimeoutError) else "connection_lost"
                send({"in_reply_to": rid, "type": "info", "code": code, "text": "%s: %r" % (step, e)})
        except RedisError as e:  # an error reply: the server did not do it
            send({"in_reply_to": rid, "type": "fail", "code": "refused", "text": "%s: %r" % (step, e)})


if __name__ == "__main__":
    main()
