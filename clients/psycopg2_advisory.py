#!/usr/bin/python3
"""lockchaos process client: a PostgreSQL session-level advisory lock through psycopg2.

As PostgreSQL's manual describes it ("Advisory Locks", explicit-locking.html, and the advisory lock
functions, functions-admin.html): pg_advisory_lock(key) waits until the lock is free and then holds
it for the session, until pg_advisory_unlock(key) or the end of the session. The connection is in
autocommit (a session lock needs no transaction); the wait is bounded by lock_timeout, whose expiry
(SQLSTATE 55P03, lock_not_available) means nothing was taken. The careful holder's `valid` asks the
server whether its own session still holds the lock (pg_locks), as the manual's pg_locks section
shows: a session ended by the server (a restart, pg_terminate_backend, keepalive) is seen only at
the client's next statement.

psycopg2 has no socket timeout of its own: a request whose reply never comes blocks forever. Like
psycopg2.extras.wait_select, a wait callback polls the connection; this one also gives up at the
request's deadline, and the connection is then closed (its session, and any lock it held, ends when
the server notices) and the answer is `info` (the request may have taken effect).

Protocol: docs/process-clients.md (JSON lines on stdin/stdout). The login comes from init: the
address is this client's proxy (`nodes[0]`), `user`, `password` and `sslmode` (an external
server's, when its cluster file gives them), `database`, `application_name` (the tag by which the
session-kill fault finds this client's sessions).
"""
import json
import select
import sys
import time
import zlib

import psycopg2
import psycopg2.errors
import psycopg2.extensions


class Deadline(Exception):
    """The reply did not come by the request's deadline."""


class NoConnection(Exception):
    """A new connection could not be made: no request reached the server."""


deadline = None  # time.monotonic() by which the current request must be answered


def wait_until_deadline(conn):
    """psycopg2 wait callback: psycopg2.extras.wait_select with a deadline."""
    while True:
        state = conn.poll()
        if state == psycopg2.extensions.POLL_OK:
            return
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise Deadline("no reply by the deadline")
        if state == psycopg2.extensions.POLL_READ:
            ready = select.select([conn.fileno()], [], [], left)[0]
        elif state == psycopg2.extensions.POLL_WRITE:
            ready = select.select([], [conn.fileno()], [], left)[1]
        else:
            raise psycopg2.OperationalError("bad state from poll: %s" % state)
        if not ready and deadline is not None and time.monotonic() >= deadline:
            raise Deadline("no reply by the deadline")


psycopg2.extensions.set_wait_callback(wait_until_deadline)


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


login, key, conn = None, None, None


def connect():
    global conn
    if conn is None or conn.closed:
        host, port = login["nodes"][0].rsplit(":", 1)
        try:
            conn = psycopg2.connect(host=host, port=int(port), user=login["user"], dbname=login["database"],
                                    password=login.get("password", ""), sslmode=login.get("sslmode", "disable"),
                                    application_name=login["application_name"], connect_timeout=2)
            conn.autocommit = True
        except (Deadline, psycopg2.Error) as e:
            drop()
            raise NoConnection(str(e).strip() or repr(e))
    return conn


def drop():
    """Close a connection whose state is unknown; the next request connects again. A lock its
    session held is then given up by the close, when the server sees it: release says so."""
    global conn, dropped_held
    dropped_held = dropped_held or held
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass
    conn = None


held = False          # this client's session was granted the lock and has not released it
dropped_held = False  # the session that held it was closed by drop(): the close gives it up

for line in sys.stdin:
    m = json.loads(line)
    rid, kind = m["id"], m["type"]
    deadline = time.monotonic() + m["timeout_ms"] / 1000.0 if "timeout_ms" in m else None
    try:
        if kind == "init":
            login = m
            # The advisory key: 31 bits of the lock's name (pg_locks shows it as classid 0, objid key).
            key = zlib.crc32(m["lock"].encode()) & 0x7FFFFFFF
            send({"in_reply_to": rid, "type": "init_ok",
                  "name": "psycopg2 %s pg_advisory_lock" % psycopg2.__version__.split()[0]})
        elif kind == "acquire":
            cur = connect().cursor()
            cur.execute("SET lock_timeout = %s", ("%dms" % max(m["timeout_ms"], 1),))
            cur.execute("SELECT pg_advisory_lock(%s)", (key,))
            held, dropped_held = True, False
            # No lease: the server holds the lock for as long as the session lives.
            send({"in_reply_to": rid, "type": "ok", "validity_ms": 0, "no_expiry": True})
        elif kind == "valid":
            cur = connect().cursor()
            cur.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
                        " AND pid = pg_backend_pid() AND classid = 0 AND objid = %s AND objsubid = 1)", (key,))
            send({"in_reply_to": rid, "type": "ok", "held": bool(cur.fetchone()[0])})
        elif kind == "release" and dropped_held:
            # The session that held the lock was closed (a request timed out): the server ends it,
            # and frees the lock, when the close reaches it — before, during or after this call.
            # An unlock on a new session could not free it; the outcome is the close's: unknown.
            held = dropped_held = False
            send({"in_reply_to": rid, "type": "info", "code": "connection_lost",
                  "text": "the session that held the lock was closed; the server frees the lock when it sees the close"})
        elif kind == "release":
            held = False
            cur = connect().cursor()
            cur.execute("SELECT pg_advisory_unlock(%s)", (key,))
            if cur.fetchone()[0]:
                send({"in_reply_to": rid, "type": "ok"})
            else:  # the server also logs "you don't own a lock of type ExclusiveLock"
                send({"in_reply_to": rid, "type": "fail", "code": "not_held", "text": "pg_advisory_unlock returned false"})
    except NoConnection as e:
        if kind == "acquire":  # nothing was asked
            send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite", "text": "connect: " + str(e)})
        elif kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:  # the old session, dropped, may still hold the lock until the server notices
            send({"in_reply_to": rid, "type": "info", "code": "connection_lost", "text": "connect: " + str(e)})
    except psycopg2.errors.LockNotAvailable as e:
        # lock_timeout: the wait ended in the server and nothing was taken.
        send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite", "text": str(e).strip()})
    except (Deadline, psycopg2.Error) as e:
        drop()
        if kind == "valid":  # a read: it changed nothing, and the session's lock cannot be vouched for
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:
            code = "timeout" if isinstance(e, Deadline) else "connection_lost"
            send({"in_reply_to": rid, "type": "info", "code": code, "text": str(e).strip() or repr(e)})
