#!/usr/bin/python3
"""lockchaos process client: OpenStack tooz's distributed lock, used as its documentation says.

https://docs.openstack.org/tooz/latest/user/tutorial/lock.html —
coordinator = coordination.get_coordinator(url, member_id); coordinator.start(start_heart=True);
lock = coordinator.get_lock(name); lock.acquire(blocking=seconds); lock.release();
lock.is_still_owner() where the driver has it (Redis, ZooKeeper).
Protocol: docs/process-clients.md (JSON lines on stdin/stdout).

LOCKCHAOS_TOOZ_DRIVER (the manifests set it) picks tooz's driver and so the URL built from init:
  redis           redis://HOST:PORT?lock_timeout=L&timeout=L           (topology redis-single)
  redis-sentinel  redis://SENTINEL?sentinel=MASTER&sentinel_fallback=... (topology redis-sentinel)
  zookeeper       zookeeper://HOST1:PORT1,HOST2:PORT2,...?timeout=S     (kazoo)
  postgresql      postgresql://USER@HOST:PORT/DATABASE                  (psycopg2)
  mysql           mysql://USER@HOST:PORT/DATABASE                       (pymysql)
  etcd3gw         etcd3+http://HOST:PORT?api_version=v3&lock_timeout=L  (etcd's JSON gateway, etcd3gw)

What each driver's lock is (tooz 3.1.0, /usr/lib/python3/dist-packages/tooz/drivers/):
- redis.py RedisLock: redis-py's Lock (SET NX PX lock_timeout s, a random token), the lease renewed
  by the coordinator's heartbeat thread (Heart, coordination.py) every ~lock_timeout/2 through
  RedisDriver.heartbeat -> RedisLock.heartbeat -> Lock.reacquire. RedisDriver.__init__ parses
  lock_timeout (and timeout, the socket timeout) with int(): the lease is whole seconds, at least 1.
  A failed renewal is only logged ("Unable to heartbeat lock"); `acquired` stays true.
- zookeeper.py ZooKeeperLock: kazoo's Lock recipe; the session timeout is int() too (>= 1 s).
- pgsql.py PostgresLock: pg_advisory_lock on a connection of its own, no lease; the session holds it.
- mysql.py MySQLLock: GET_LOCK(name, 0) polled, no lease; the session holds it.
- etcd3gw.py Etcd3Lock: a lease of lock_timeout s (int()), then a transaction that puts the key
  under it if its create_revision is 0, retried until blocking runs out; the heartbeat thread
  refreshes the lease (Etcd3Lock.heartbeat: lease.refresh(), its answer unchecked); release deletes
  the key if it still holds the lock's uuid. No is_still_owner.

Replies: the Redis lease is background-renewed, so validity_ms is 0 (until released: the holder
never times it) and ttl_ms the lease the server enforces between renewals (lock_timeout); the
ZooKeeper lock reports the session timeout the server granted as ttl_ms; the SQL locks are session
locks (no_expiry). `valid` is tooz's own ownership check, is_still_owner(), on Redis and ZooKeeper;
the SQL drivers have none (it raises NotImplemented), so their manifests do not support `valid`.

Any exception tooz raises that this client does not map to a reply ends the process at once
(os._exit): a library that raised may have left threads behind that keep a process alive, and a
client that stops answering must be seen to have died, not hang.
"""
import json
import logging
import os
import sys
import threading
import traceback
import uuid
from urllib.parse import quote

import tenacity
import tooz
from tooz import coordination

DRIVER = os.environ.get("LOCKCHAOS_TOOZ_DRIVER", "redis")

LOCK_TIMEOUTS = ()
if DRIVER == "zookeeper":
    from kazoo.exceptions import LockTimeout
    LOCK_TIMEOUTS = (LockTimeout,)

out = threading.Lock()


def send(msg):
    with out:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def die(why):
    sys.stderr.write("tooz client: %s; exiting\n" % why)
    sys.stderr.flush()
    os._exit(3)


# tooz logs through logging: its warnings ("Unable to heartbeat lock ...") go to stderr, saved in
# the run directory as client-N.stderr.
logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                    format="%(asctime)s %(name)s %(levelname)s %(message)s")

granted_session_ms = None  # ZooKeeper: the session timeout the server granted (kazoo logs it)


class _Negotiated(logging.Handler):
    """Catches kazoo's 'Session created ... negotiated session timeout: N' line (level BLATHER)."""

    def emit(self, record):
        global granted_session_ms
        if isinstance(record.msg, str) and record.msg.startswith("Session created") and len(record.args) >= 3:
            granted_session_ms = int(record.args[2])


def url_for(m):
    """The coordinator URL and lease for init message m."""
    host, port = m["nodes"][0].rsplit(":", 1)
    secs = max(1, round(m["ttl_ms"] / 1000.0))  # tooz int()s these: whole seconds, at least 1
    if DRIVER == "redis":
        return "redis://%s:%s?lock_timeout=%d&timeout=%d" % (host, port, secs, secs), secs * 1000
    if DRIVER == "redis-sentinel":
        first = m["sentinels"][0]
        q = "sentinel=%s&lock_timeout=%d&timeout=%d" % (quote(m["sentinel_master"]), secs, secs)
        for s in m["sentinels"][1:]:
            q += "&sentinel_fallback=" + s
        return "redis://%s?%s" % (first, q), secs * 1000
    if DRIVER == "zookeeper":
        zsecs = max(1, round(m.get("session_timeout_ms", m["ttl_ms"]) / 1000.0))
        return "zookeeper://%s?timeout=%d" % (",".join(m["nodes"]), zsecs), zsecs * 1000
    if DRIVER == "etcd3gw":
        # etcd 3.4's gateway serves /v3/ (tooz's default, v3alpha, is gone since 3.4's v3beta).
        return "etcd3+http://%s:%s?api_version=v3&lock_timeout=%d&timeout=%d" % (host, port, secs, secs), secs * 1000
    if DRIVER in ("postgresql", "mysql"):
        user = quote(m["user"], safe="")
        if m.get("password"):
            user += ":" + quote(m["password"], safe="")
        return "%s://%s@%s:%s/%s" % (DRIVER, user, host, port, quote(m.get("database") or "")), 0
    die("unknown LOCKCHAOS_TOOZ_DRIVER %r (want redis, redis-sentinel, zookeeper, postgresql, mysql or etcd3gw)" % DRIVER)


def shim_etcd3gw():
    """Let Debian's tooz 3.1.0 build its etcd3gw driver with Debian's python3-etcd3gw 2.0.0.

    Etcd3Driver.__init__ calls etcd3gw.client(..., api_path=...), but etcd3gw 2.0.0's client()
    takes no api_path (its Etcd3Client does): as packaged, the driver cannot start at all
    (TypeError: client() got an unexpected keyword argument 'api_path'). This hands the call to
    Etcd3Client, which is what newer etcd3gw's client() does; nothing of the lock changes.
    """
    import etcd3gw
    from etcd3gw.client import Etcd3Client
    from tooz.drivers import etcd3gw as driver

    def client(**kwargs):
        return Etcd3Client(**kwargs)

    etcd3gw.client = client
    driver.etcd3gw.client = client


def route_sentinel(routes):
    """Sentinel names the master by its real address; connect to this client's proxy for it.

    routes (init's `routes`, real -> proxied) is applied where redis-py's Sentinel hands the
    master's address to the connection pool, so every connection tooz makes to the master goes
    through the proxy the faults act on (docs/process-clients.md, Sentinel).
    """
    from redis import sentinel

    orig = sentinel.Sentinel.discover_master

    def discover_master(self, service_name):
        host, port = orig(self, service_name)
        to = routes.get("%s:%s" % (host, port))
        if to is None:
            return host, port
        h, p = to.rsplit(":", 1)
        return h, int(p)

    sentinel.Sentinel.discover_master = discover_master


coord = lock = None
lease_ms = 0


def handle(m):
    global coord, lock, lease_ms
    rid, kind = m["id"], m["type"]
    if kind == "init":
        if DRIVER == "postgresql":
            # tooz's PostgresDriver.get_connection passes only host, port, database, user and
            # password to psycopg2.connect: libpq takes the rest from its environment.
            os.environ["PGAPPNAME"] = m.get("application_name", "")
            os.environ["PGSSLMODE"] = m.get("sslmode", "disable")
            os.environ.setdefault("PGCONNECT_TIMEOUT", "2")
        if DRIVER == "etcd3gw":
            shim_etcd3gw()
        if DRIVER == "redis-sentinel" and m.get("routes"):
            route_sentinel(m["routes"])
        if DRIVER == "zookeeper":
            h = _Negotiated()
            h.setLevel(1)
            lg = logging.getLogger("kazoo")
            lg.setLevel(1)
            lg.addHandler(h)
            lg.propagate = False
            w = logging.StreamHandler(sys.stderr)  # kazoo's own warnings still reach stderr
            w.setLevel(logging.WARNING)
            lg.addHandler(w)
        url, lease_ms = url_for(m)
        coord = coordination.get_coordinator(url, ("lockchaos-%d-%s" % (m["client"], uuid.uuid4().hex[:8])).encode())
        coord.start(start_heart=True)
        lock = coord.get_lock(m["lock"].encode())
        if DRIVER == "zookeeper" and granted_session_ms:
            lease_ms = granted_session_ms
        send({"in_reply_to": rid, "type": "init_ok", "name": "tooz %s %s lock" % (tooz_version(), DRIVER)})
        return
    try:
        if kind == "acquire":
            try:
                got = lock.acquire(blocking=max(m["timeout_ms"], 1) / 1000.0)
            except tenacity.RetryError:
                got = False  # the SQL drivers' polling gave up: nothing is held
            except LOCK_TIMEOUTS:
                # ZooKeeperLock.acquire passes kazoo's LockTimeout through where tooz's Lock API
                # says acquire returns False; kazoo deleted its contender node (best effort).
                got = False
            except Exception as e:
                if not isinstance(e.__context__, tenacity.RetryError):
                    raise
                # MySQLLock.acquire: the polling gave up (RetryError, nothing taken) and closing the
                # lock's connection then raised pymysql's "Already closed" in its place -- the
                # connection a killed session left closed (docs/libraries/tooz.md).
                sys.stderr.write("acquire: %r after %r: nothing taken\n" % (e, e.__context__))
                got = False
            if not got:
                send({"in_reply_to": rid, "type": "fail", "code": "timeout_definite"})
            elif DRIVER in ("postgresql", "mysql"):
                send({"in_reply_to": rid, "type": "ok", "validity_ms": 0, "no_expiry": True})
            else:
                send({"in_reply_to": rid, "type": "ok", "validity_ms": 0, "ttl_ms": lease_ms})
        elif kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": bool(lock.is_still_owner())})
        elif kind == "release":
            if lock.release():
                send({"in_reply_to": rid, "type": "ok"})
            else:
                send({"in_reply_to": rid, "type": "fail", "code": "not_held", "text": "release() returned False"})
    except coordination.ToozConnectionError as e:
        if kind == "valid":  # the check could not be made: the library cannot say it holds
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:  # the request may have reached the server
            send({"in_reply_to": rid, "type": "info", "code": "connection_lost", "text": str(e)[:300]})
    except tooz.ToozError as e:
        # A server error (a session the server ended, a refused statement): on the SQL drivers
        # tooz has closed the lock's connection (PostgresLock/MySQLLock.acquire).
        if kind == "valid":
            send({"in_reply_to": rid, "type": "ok", "held": False})
        else:
            send({"in_reply_to": rid, "type": "info", "code": "connection_lost", "text": str(e)[:300]})


def tooz_version():
    try:
        from importlib import metadata
        return metadata.version("tooz")
    except Exception:
        return "?"


try:
    for line in sys.stdin:
        handle(json.loads(line))
except Exception:
    traceback.print_exc()
    die("tooz raised an exception the protocol has no answer for")
os._exit(0)  # stdin closed: exit without waiting for tooz's threads
