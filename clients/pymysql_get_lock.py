#!/usr/bin/python3
"""lockchaos process client: MariaDB's user-level lock GET_LOCK through PyMySQL.

As MariaDB's manual describes it (GET_LOCK, RELEASE_LOCK, IS_USED_LOCK): GET_LOCK(name, timeout)
waits in the server up to timeout seconds and returns 1 when granted, 0 when the wait timed out;
the lock is held for the session, until RELEASE_LOCK(name) or the end of the session. The careful
holder's `valid` asks the server whether its own session still holds it (IS_USED_LOCK(name) =
CONNECTION_ID()): a session ended by the server (a restart, KILL, wait_timeout) is seen only at
the client's next statement.

PyMySQL's read_timeout and write_timeout bound each socket operation; one set from the request's
deadline makes a reply that never comes an error, the connection is closed (its session, and any
lock it held, ends when the server notices) and the answer is `info` (the request may have taken
effect).

--bug no-valid is the classic mistake: `valid` always answers held, as a holder that trusts its
lock until it releases it (pymysql-get-lock-no-valid.yaml).

Protocol: docs/process-clients.md (JSON lines on stdin/stdout). The login comes from init: the
address is this client's proxy (`nodes[0]`), `user` (on the local server, the tag by which the
session-kill fault finds this client's sessions), `password` and `database` when given.
"""
import argparse
import json
import sys

import pymysql


class NoConnection(Exception):
    """A new connection could not be made: no request reached the server."""


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


login, name, conn = None, None, None
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--bug", choices=["none", "no-valid"], default="none")
bug = ap.parse_args().bug


def connect(timeout):
    global conn
    if conn is None or not conn.open:
        host, port = login["nodes"][0].rsplit(":", 1)
        try:
            conn = pymysql.connect(host=host, port=int(port), user=login["user"], password=login.get("password", ""),
                                   database=login.get("database") or None, connect_timeout=2, autocommit=True)
        except pymysql.Error as e:
            drop()
            raise NoConnection(str(e).strip() or repr(e))
    # Every socket read and write of this request ends by its deadline.
    conn._read_timeout = conn._write_timeout = max(timeout, 0.05)
    conn._sock.settimeout(max(timeout, 0.05))
    return conn


def drop():
    """Close a connection whose state is unknown; the next request connects again."""
    global conn
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass
    conn = None


def query(sql, args, timeout):
    with connect(timeout).cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()[0]


for line in sys.stdin:
    m = json.loads(line)
    rid, kind = m["id"], m["type"]
    timeout = m.get("timeout_ms", 1000) / 1000.0
    try:
        if kind == "init":
            login = m
            name = m["lock"][:64]  # MariaDB's limit for a lock's name
            send({"in_reply_to": rid, "type": "init_ok", "name": "PyMySQL %s GET_LOCK" % pymysql.__version__})
        elif kind == "acquire":
            # The server waits a little less than the request may, so it answers 0 before we stop listening.
            got = query("SELECT GET_LOCK(%s, %s)", (name, max(timeout - 0.1, 0)), timeout)
            if got == 1:
                # No lease: the server holds the lock for as long as the session lives.
                send({"in_reply_to": rid, "type": "ok", "validity_ms": 0, "no_expiry": True})
            elif got == 0:
                send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite", "text": "GET_LOCK timed out"})
            else:  # NULL: the wait failed in the server (the session was killed meanwhile)
                drop()
                send({"in_reply_to": rid, "type": "fail", "code": "refused", "text": "GET_LOCK returned NULL"})
        elif kind == "valid" and bug == "no-valid":
            send({"in_reply_to": rid, "type": "ok", "held": True})
        elif kind == "valid":
            held = query("SELECT IS_USED_LOCK(%s) = CONNECTION_ID()", (name,), timeout)
            send({"in_reply_to": rid, "type": "ok", "held": held == 1})
        elif kind == "release":
            got = query("SELECT RELEASE_LOCK(%s)", (name,), timeout)
            if got == 1:
                send({"in_reply_to": rid, "type": "ok"})
            else:  # 0: another session holds it; NULL: nobody does
                send({"in_reply_to": rid, "type": "fail", "code": "not_held", "text": "RELEASE_LOCK returned %s" % got})
    except NoConnection as e:
        if kind == "acquire":  # nothing was asked
            send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite", "text": "connect: " + str(e)})
        elif kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:  # the old session, dropped, may still hold the lock until the server notices
            send({"in_reply_to": rid, "type": "info", "code": "connection_lost", "text": "connect: " + str(e)})
    except pymysql.err.OperationalError as e:
        drop()
        if kind == "valid":  # a read: it changed nothing, and the session's lock cannot be vouched for
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:
            send({"in_reply_to": rid, "type": "info", "code": "connection_lost", "text": str(e).strip() or repr(e)})
    except (pymysql.Error, OSError) as e:
        drop()
        if kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:
            send({"in_reply_to": rid, "type": "info", "code": "timeout", "text": str(e).strip() or repr(e)})
