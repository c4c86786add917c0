#!/usr/bin/python3
"""A protocol-only client (no real lock) that does not exit when its stdin closes: only a kill
from outside (Pdeathsig, Close) ends it."""
import json, sys, time
for line in sys.stdin:
    m = json.loads(line)
    r = {"in_reply_to": m["id"], "type": "ok"}
    if m["type"] == "init":
        r["type"] = "init_ok"
    elif m["type"] == "valid":
        r["held"] = True
    print(json.dumps(r), flush=True)
time.sleep(120)
