#!/usr/bin/python3
"""A lock to test with lockchaos: SET key token NX PX ttl; release by a Lua compare-and-delete."""
import json, sys, time, uuid
import redis

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

def reply(req, **fields):
    fields["in_reply_to"] = req["id"]
    print(json.dumps(fields), flush=True)

for line in sys.stdin:
    req = json.loads(line)
    kind = req["type"]
    try:
        if kind == "init":
            host, port = req["nodes"][0].rsplit(":", 1)
            ttl_ms, key = req["ttl_ms"], req["lock"]
            r = redis.Redis(host=host, port=int(port), socket_timeout=max(ttl_ms / 4000, 0.1))
            reply(req, type="init_ok", name="mylock (SET NX PX + Lua)")
        elif kind == "acquire":
            token, deadline = uuid.uuid4().hex, time.monotonic() + req["timeout_ms"] / 1000
            while not r.set(key, token, nx=True, px=ttl_ms):
                if time.monotonic() > deadline:
                    reply(req, type="fail", code="timeout_definite")
                    break
                time.sleep(0.01)
            else:
                reply(req, type="ok", validity_ms=ttl_ms, ttl_ms=ttl_ms)
        elif kind == "valid":
            reply(req, type="ok", held=r.get(key) == token.encode())
        elif kind == "release":
            if r.eval(RELEASE, 1, key, token) == 1:
                reply(req, type="ok")
            else:
                reply(req, type="fail", code="not_held", text="the key holds another token")
    except redis.exceptions.RedisError as e:  # timeout or lost connection: it may have happened
        if kind == "valid":
            reply(req, type="ok", held=False)
        else:
            reply(req, type="info", code="connection_lost", text=str(e))
