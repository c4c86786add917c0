#!/usr/bin/python3
"""A protocol-only client for the clock tests: every acquire is refused, its text the process's
own time.time() and time.monotonic(), so a test sees the clock the process reads."""
import json, sys, time
for line in sys.stdin:
    m = json.loads(line)
    r = {"in_reply_to": m["id"]}
    if m["type"] == "init":
        r.update(type="init_ok", name="clock")
    else:
        r.update(type="fail", code="refused", text="clock %.6f %.6f" % (time.time(), time.monotonic()))
    print(json.dumps(r)); sys.stdout.flush()
