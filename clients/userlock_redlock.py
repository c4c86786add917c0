#!/usr/bin/python3
"""lockchaos process client: a Redlock written as a user writes it with redis-py's raw commands.

Over the N independent masters in `nodes` (redis-multi): SET key token NX PX ttl on every master
at once (a thread each), held when a majority (N/2+1) said OK and time is left — validity = TTL
- elapsed - drift (drift = TTL/100 + 2 ms), counted from when the attempt began, as antirez's
algorithm says, waiting a tenth of the TTL at most for the masters' answers; otherwise it deletes
its token from every master and retries after a jittered
sleep of 5-20 ms. Release: the Lua compare-and-delete on every master. `valid` answers from the
client's own validity, without asking the servers. It marks no named point: faults reach it
through its connections (the proxies in `nodes`) and its process only.

--bug no-validity: the majority is enough; the holder trusts the lease until it releases
(validity_ms 0), however long the acquisition took — the check Redlock's validity exists for.

Protocol: docs/process-clients.md (JSON lines on stdin/stdout).
"""
import argparse
import json
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import redis
from redis.exceptions import ConnectionError, RedisError, TimeoutError

RELEASE = """if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end"""

BUGS = ["none", "no-validity"]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


class Redlock:
    def __init__(self, nodes, key, ttl_ms, bug):
        # A timeout of a few TTLs, as userlock.py's: a late reply still comes, and the validity
        # rule decides what a late majority is worth. A round does not wait for every master: it
        # is decided once a majority answered one way (a master cut off would otherwise hold
        # every round for the whole timeout).
        op = max(4 * ttl_ms / 1000.0, 1.0)
        self.masters = []
        for n in nodes:
            host, port = n.rsplit(":", 1)
            self.masters.append(redis.Redis(host=host, port=int(port), socket_timeout=op, socket_connect_timeout=op))
        # Room for the requests of earlier rounds still waiting on a master that does not answer.
        self.pool = ThreadPoolExecutor(max_workers=8 * len(self.masters))
        self.key, self.ttl_ms, self.bug = key, ttl_ms, bug
        self.quorum = len(self.masters) // 2 + 1

    def round(self, f, yes, within=None):
        """f on every master at once, until a majority answered yes (True) or too many answered
        otherwise for a majority to be left (False), or within seconds passed (None: undecided);
        and the first error seen, if any."""
        def call(m):
            try:
                return yes(f(m)), None
            except RedisError as e:
                return False, e
        pending = {self.pool.submit(call, m) for m in self.masters}
        deadline = None if within is None else time.monotonic() + within
        ayes = noes = 0
        first = None
        # Polled, not concurrent.futures.wait(timeout=...): under libfaketime (clock-skew) a
        # condition's timed wait did not time out (a round meant to end at 200 ms took 3 s).
        while pending:
            done = {f for f in pending if f.done()}
            if not done:
                if deadline is not None and time.monotonic() >= deadline:
                    return None, first  # undecided: for an acquire, a majority now leaves no validity
                time.sleep(0.001)
                continue
            pending -= done
            for fut in done:
                ok, err = fut.result()
                first = first or err
                if ok:
                    ayes += 1
                else:
                    noes += 1
            if ayes >= self.quorum:
                return True, first
            if noes > len(self.masters) - self.quorum:
                return False, first
        return False, first

    def attempt(self, tok):
        """One round: (when it began, its validity in s) when held, None when not (the token
        then deleted everywhere)."""
        began = time.monotonic()
        # The correct lock waits for its masters' answers a tenth of the lease at most (antirez: a
        # timeout small against the TTL, so a master that does not answer costs little of it). The
        # no-validity bug waits for any majority, however late (the sockets' timeout of 4 TTLs).
        within = None if self.bug == "no-validity" else max(self.ttl_ms / 10000.0, 0.02)
        won, _ = self.round(lambda m: m.set(self.key, tok, nx=True, px=self.ttl_ms), bool, within)
        elapsed = time.monotonic() - began
        drift = (self.ttl_ms / 100.0 + 2) / 1000.0
        validity = self.ttl_ms / 1000.0 - elapsed - drift
        if won is True and (validity > 0 or self.bug == "no-validity"):
            return began, validity
        # Delete what this attempt set, as briefly as it waited for it: a key left on a master
        # that does not answer expires with its TTL.
        self.unlock(tok, within)
        return None

    def unlock(self, tok, within=None):
        """Compare-and-delete on every master, for within seconds or a lease at most (the keys
        expire anyway): whether a majority deleted (None: undecided by then), and the first error."""
        if within is None:
            within = self.ttl_ms / 1000.0
        return self.round(lambda m: m.eval(RELEASE, 1, self.key, tok), lambda n: n == 1, within)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bug", choices=BUGS, default="none")
    bug = ap.parse_args().bug

    lock = None
    token = None  # the held lease's token, None when not held
    until = None  # monotonic time the held lease is trusted until; None = until released
    for line in sys.stdin:
        m = json.loads(line)
        rid, kind = m["id"], m["type"]
        try:
            if kind == "init":
                lock = Redlock(m["nodes"], m["lock"], m["ttl_ms"], bug)
                name = "userlock-redlock (redis-py %s over %d masters, quorum %d)" % (
                    redis.__version__, len(lock.masters), lock.quorum)
                if bug != "none":
                    name += " --bug " + bug
                send({"in_reply_to": rid, "type": "init_ok", "name": name})
            elif kind == "acquire":
                called = time.monotonic()
                deadline = called + m["timeout_ms"] / 1000.0
                while True:
                    tok = os.urandom(16).hex()
                    got = lock.attempt(tok)
                    if got is not None:
                        break
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(random.uniform(0.005, 0.020))
                if got is None:
                    send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite"})
                    continue
                began, validity = got
                token = tok
                if bug == "no-validity":
                    until, validity_ms = None, 0
                else:
                    until = began + validity
                    validity_ms = max(int((until - called) * 1000), 1)
                send({"in_reply_to": rid, "type": "ok", "fence": 0, "validity_ms": validity_ms,
                      "ttl_ms": lock.ttl_ms})
            elif kind == "valid":
                held = token is not None and (until is None or time.monotonic() < until)
                send({"in_reply_to": rid, "type": "ok", "held": held})
            elif kind == "release":
                tok, token, until = token, None, None
                if tok is None:
                    send({"in_reply_to": rid, "type": "fail", "code": "not_held", "text": "no lease"})
                    continue
                deleted, err = lock.unlock(tok)
                if deleted is True:
                    send({"in_reply_to": rid, "type": "ok"})
                elif deleted is None or isinstance(err, (TimeoutError, ConnectionError)):
                    # a delete that may have reached its master: the outcome is not known
                    send({"in_reply_to": rid, "type": "info", "code": "timeout",
                          "text": "EVAL compare-and-delete: %r" % err})
                else:
                    send({"in_reply_to": rid, "type": "fail", "code": "not_held",
                          "text": "no majority of the masters held the token"})
        except RedisError as e:
            send({"in_reply_to": rid, "type": "info", "code": "connection_lost", "text": repr(e)})


if __name__ == "__main__":
    main()
