#!/usr/bin/python3
"""A protocol-only client (no lock behind it) for the Locker's own tests: acquire succeeds, then
says lost; valid answers held; release says not_held; a second acquire says info timeout."""
import json, sys
n = 0
for line in sys.stdin:
    m = json.loads(line)
    r = {"in_reply_to": m["id"]}
    if m["type"] == "init":
        r.update(type="init_ok", name="fake")
    elif m["type"] == "acquire":
        n += 1
        if n == 1:
            r.update(type="ok", fence=7, validity_ms=400, ttl_ms=500)
            print(json.dumps(r)); sys.stdout.flush()
            r = {"type": "lost", "text": "gone"}
        else:
            r.update(type="info", code="timeout", text="slow")
    elif m["type"] == "valid":
        r.update(type="ok", held=True)
    elif m["type"] == "release":
        r.update(type="fail", code="not_held", text="not mine")
    print(json.dumps(r)); sys.stdout.flush()
