#!/bin/sh
# images/build.sh builds the docker backend's images offline, from what Debian installed on this
# machine: no registry is needed (none is reachable here), so `docker build FROM ...` is out.
# Each image is a root filesystem assembled from the host's binaries plus the shared libraries
# ldd lists, turned into an image with `docker import`.
#
#   lockchaos/redis      redis-server (and redis-sentinel, the same binary), /bin/sh (dash)
#   lockchaos/zookeeper  a jlink'ed Java runtime, ZooKeeper's jar and its dependencies, slf4j,
#                        /bin/sh, and an entrypoint that reads the official zookeeper image's
#                        environment (ZOO_MY_ID, ZOO_SERVERS, ZOO_TICK_TIME, ..., JVMFLAGS)
#   lockchaos/postgres   Debian's PostgreSQL server (initdb, postgres, pg_basebackup, its modules and share
#                        files, tzdata), /bin/sh, and an entrypoint that does what the official
#                        postgres image does for lockchaos: run as --user postgres, initdb at the
#                        first start, POSTGRES_HOST_AUTH_METHOD for every address
#   lockchaos/mariadb    Debian's MariaDB server (mariadbd, its error messages and charsets)
#                        with a data dir made here by mariadb-install-db (the image carries no
#                        shell tools to make one at start): root and an anonymous account on
#                        every address, no password, as the official image with
#                        MARIADB_ALLOW_EMPTY_ROOT_PASSWORD; runs as root (--user=root)
#   lockchaos/pgbouncer  Debian's pgbouncer and /bin/sh: the harness writes its configuration at
#                        the container's start (there is no official pgbouncer image)
#   lockchaos/etcd       Debian's etcd (etcd-server), run with flags as the official image is
#
# An image is rebuilt only when its inputs changed: each carries a label lockchaos.hash over its
# inputs, and an image whose label matches is kept. --force rebuilds anyway.
#
# usage: images/build.sh [--force] [redis] [zookeeper] [postgres] [mariadb] [pgbouncer] [etcd]
#       (default: all)
set -eu

force=0
want=""
for a in "$@"; do
	case "$a" in
	--force) force=1 ;;
	redis | zookeeper | postgres | mariadb | pgbouncer | etcd) want="$want $a" ;;
	-h | --help)
		sed -n '2,30p' "$0"
		exit 0
		;;
	*)
		echo "images/build.sh: unknown argument $a (use --force, redis, zookeeper, postgres, mariadb, pgbouncer, etcd)" >&2
		exit 254
		;;
	esac
done
[ -n "$want" ] || want="redis zookeeper postgres mariadb pgbouncer etcd"

die() {
	echo "images/build.sh: $*" >&2
	exit 1
}

command -v docker >/dev/null || die "docker not found (install docker.io, or use --backend local)"
docker info >/dev/null 2>&1 || die "the docker daemon is not reachable (start it: systemctl start docker; or check DOCKER_HOST)"

self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
work="$(mktemp -d "${TMPDIR:-/tmp}/lockchaos-images-XXXXXX")"
trap 'rm -rf "$work"' EXIT INT TERM

# add ROOT FILE...: copy each file (symlinks followed) to the same path under ROOT, with every
# shared library ldd lists for it.
add() {
	root=$1
	shift
	for f in "$@"; do
		[ -e "$f" ] || die "$f not found (apt-get install the package that has it, or run make deps)"
		mkdir -p "$root$(dirname "$f")"
		cp -L "$f" "$root$f"
		ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
			while read -r lib; do
				if [ ! -e "$root$lib" ]; then
					mkdir -p "$root$(dirname "$lib")"
					cp -L "$lib" "$root$lib"
				fi
			done
	done
}

# base ROOT: merged-/usr layout as Debian's, /bin/sh, users, and writable /tmp.
base() {
	root=$1
	mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/lib64" "$root/usr/sbin" "$root/etc" "$root/tmp" "$root/data"
	ln -s usr/bin "$root/bin"
	ln -s usr/lib "$root/lib"
	ln -s usr/lib64 "$root/lib64"
	ln -s usr/sbin "$root/sbin"
	chmod 1777 "$root/tmp"
	add "$root" /bin/dash
	ln -s dash "$root/usr/bin/sh"
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'redis:x:999:999::/data:/bin/sh' \
		'zookeeper:x:1000:1000::/data:/bin/sh' 'postgres:x:1001:1001::/var/lib/postgresql:/bin/sh' \
		'nobody:x:65534:65534:nobody:/nonexistent:/bin/sh' >"$root/etc/passwd"
	printf '%s\n' 'root:x:0:' 'redis:x:999:' 'zookeeper:x:1000:' 'postgres:x:1001:' 'nogroup:x:65534:' >"$root/etc/group"
	printf '%s\n' 'hosts: files dns' >"$root/etc/nsswitch.conf"
}

# fingerprint FILE...: a hash over the build script and the inputs' names, sizes and times; cheap
# (no reading of the 100 MB Java modules file) and changes whenever Debian upgrades a package.
fingerprint() {
	{
		cat "$self"
		for f in "$@"; do ls -lLn --time-style=+%s "$f"; done
	} | sha256sum | cut -c1-16
}

# import NAME HASH ROOT CHANGE...: tar ROOT into image NAME:latest with the label and changes.
import() {
	name=$1 hash=$2 root=$3
	shift 3
	set -- --change "LABEL lockchaos.hash=$hash" --change "LABEL lockchaos.image=$name" "$@"
	old=$(docker image inspect -f '{{.Id}}' "$name:latest" 2>/dev/null || true)
	# owner root: the files were copied by whoever runs this script; files owned by the owner-map
	# and group-map files' users (OWNER_MAP, GROUP_MAP: "+hostuid name:uid" lines) keep them.
	tar -C "$root" --numeric-owner ${OWNER_MAP:+--owner-map="$OWNER_MAP"} ${GROUP_MAP:+--group-map="$GROUP_MAP"} \
		--owner=0 --group=0 -cf - . | docker import "$@" - "$name:latest" >/dev/null
	# The replaced image would stay as a dangling <none> image; drop it unless a container uses it.
	if [ -n "$old" ] && [ "$old" != "$(docker image inspect -f '{{.Id}}' "$name:latest")" ]; then
		docker rmi "$old" >/dev/null 2>&1 || true
	fi
	size=$(docker image inspect -f '{{.Size}}' "$name:latest")
	echo "images/build.sh: built $name:latest ($((size / 1000000)) MB, hash $hash)"
}

# current NAME HASH: true, saying so, when NAME:latest exists with label HASH.
current() {
	[ "$force" = 0 ] || return 1
	have=$(docker image inspect -f '{{index .Config.Labels "lockchaos.hash"}}' "$1:latest" 2>/dev/null) || return 1
	[ "$have" = "$2" ] || return 1
	echo "images/build.sh: $1:latest is current (hash $2; --force rebuilds)"
}

# one_binary NAME IMAGE PACKAGE: a root with the server that is the one binary NAME on PATH (its
# libraries with it) at /usr/bin/NAME; sets hash and root, or fails when IMAGE is current.
one_binary() {
	command -v "$1" >/dev/null || die "$1 not found (apt-get install $3)"
	bin=$(readlink -f "$(command -v "$1")")
	hash=$(fingerprint "$bin" /bin/dash)
	if current "$2" "$hash"; then
		return 1
	fi
	root="$work/$1"
	base "$root"
	add "$root" "$bin"
	if [ "$bin" != "/usr/bin/$1" ]; then
		mv "$root$bin" "$root/usr/bin/$1"
	fi
}

build_redis() {
	one_binary redis-server lockchaos/redis redis-server || return 0
	# redis-check-rdb, redis-server and redis-sentinel are one binary that looks at argv[0].
	ln -s redis-server "$root/usr/bin/redis-sentinel"
	import lockchaos/redis "$hash" "$root" \
		--change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
		--change 'WORKDIR /data' \
		--change 'EXPOSE 6379' \
		--change 'CMD ["redis-server"]'
}

# The modules ZooKeeper 3.8 and its dependencies use (jdeps --print-module-deps on the jars),
# plus jdk.management for the OS bean ZooKeeper reads.
zk_modules=java.base,java.desktop,java.management,java.naming,java.security.jgss,java.security.sasl,java.sql,jdk.sctp,jdk.unsupported,jdk.management

build_zookeeper() {
	jar=/usr/share/java/zookeeper.jar
	[ -e "$jar" ] || die "$jar not found (apt-get install zookeeper)"
	[ -e /usr/share/java/slf4j-simple.jar ] || die "slf4j-simple.jar not found (apt-get install libslf4j-java)"
	command -v java >/dev/null || die "java not found (apt-get install default-jre-headless)"
	java=$(readlink -f "$(command -v java)")
	jhome=$(dirname "$(dirname "$java")")
	# The jars on zookeeper.jar's manifest Class-Path (Debian lists its dependencies there).
	jars=$(unzip -p "$jar" META-INF/MANIFEST.MF 2>/dev/null | tr -d '\r' |
		awk '/^Class-Path:/ { on = 1; sub(/^Class-Path: /, ""); printf "%s", $0; next }
		     on && /^ / { sub(/^ /, ""); printf "%s", $0; next } { on = 0 }')
	[ -n "$jars" ] || die "cannot read the Class-Path of $jar (is unzip installed?)"
	present=""
	for j in $jars; do [ -e "$j" ] && present="$present $j"; done
	# shellcheck disable=SC2086
	hash=$(fingerprint "$jhome/release" "$jhome/lib/modules" /bin/dash "$jar" /usr/share/java/slf4j-simple.jar $present)
	if current lockchaos/zookeeper "$hash"; then
		return
	fi
	root="$work/zookeeper"
	base "$root"
	mkdir -p "$root/opt" "$root/conf" "$root/datalog" "$root/logs"
	# A jlink'ed runtime with only the modules ZooKeeper needs is a third of the JRE's size; a
	# machine with a JRE but no jmods (no JDK) gets the whole JRE instead.
	if [ -x "$jhome/bin/jlink" ] && [ -d "$jhome/jmods" ]; then
		"$jhome/bin/jlink" --add-modules "$zk_modules" --output "$root/opt/java" \
			--strip-debug --no-header-files --no-man-pages --compress=2 ||
			die "jlink failed"
		# Class data sharing shortens the JVM's start, as -Xshare:auto in the local backend.
		"$root/opt/java/bin/java" -Xshare:dump >/dev/null 2>&1 || true
	else
		mkdir -p "$root/opt/java"
		(cd "$jhome" && tar -chf - bin conf lib release) | tar -C "$root/opt/java" -xf -
		rm -rf "$root/opt/java/lib/ct.sym" "$root/opt/java/lib/src.zip"
	fi
	for f in "$root"/opt/java/bin/* "$root"/opt/java/lib/*.so "$root"/opt/java/lib/server/*.so; do
		ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
			while read -r lib; do
				[ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"; }
			done
	done
	ln -s /opt/java/bin/java "$root/usr/bin/java"
	# shellcheck disable=SC2086
	add "$root" "$jar" /usr/share/java/slf4j-simple.jar $present

	# zkServer.sh: the official image's command; JVMFLAGS as its zkEnv.sh reads them.
	cat >"$root/usr/bin/zkServer.sh" <<'EOF'
#!/bin/sh
# lockchaos/zookeeper: runs QuorumPeerMain in the foreground whatever the argument
# (the official image's command is "zkServer.sh start-foreground").
# shellcheck disable=SC2086
exec java -Xmx${ZK_SERVER_HEAP:-1000}m $JVMFLAGS -Dzookeeper.log.dir="$ZOO_LOG_DIR" \
	-cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
	org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZOO_CONF_DIR/zoo.cfg"
EOF
	# docker-entrypoint.sh: the official image's, in POSIX sh (no bash, no gosu: runs as root).
	cat >"$root/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
if [ ! -f "$ZOO_CONF_DIR/zoo.cfg" ]; then
	{
		echo "dataDir=$ZOO_DATA_DIR"
		echo "dataLogDir=$ZOO_DATA_LOG_DIR"
		echo "tickTime=$ZOO_TICK_TIME"
		echo "initLimit=$ZOO_INIT_LIMIT"
		echo "syncLimit=$ZOO_SYNC_LIMIT"
		echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
		echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
		echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
		echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
		echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
		for server in ${ZOO_SERVERS:-server.1=localhost:2888:3888;2181}; do echo "$server"; done
		if [ -n "$ZOO_4LW_COMMANDS_WHITELIST" ]; then echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"; fi
		for extra in $ZOO_CFG_EXTRA; do echo "$extra"; done
	} >"$ZOO_CONF_DIR/zoo.cfg"
fi
[ -f "$ZOO_DATA_DIR/myid" ] || echo "${ZOO_MY_ID:-1}" >"$ZOO_DATA_DIR/myid"
exec "$@"
EOF
	chmod 755 "$root/usr/bin/zkServer.sh" "$root/docker-entrypoint.sh"
	import lockchaos/zookeeper "$hash" "$root" \
		--change 'ENV PATH=/opt/java/bin:/usr/bin:/bin' \
		--change 'ENV JAVA_HOME=/opt/java' \
		--change 'ENV ZOO_CONF_DIR=/conf ZOO_DATA_DIR=/data ZOO_DATA_LOG_DIR=/datalog ZOO_LOG_DIR=/logs' \
		--change 'ENV ZOO_TICK_TIME=2000 ZOO_INIT_LIMIT=5 ZOO_SYNC_LIMIT=2 ZOO_AUTOPURGE_PURGEINTERVAL=0 ZOO_AUTOPURGE_SNAPRETAINCOUNT=3 ZOO_MAX_CLIENT_CNXNS=60 ZOO_STANDALONE_ENABLED=true ZOO_ADMINSERVER_ENABLED=true' \
		--change 'WORKDIR /data' \
		--change 'EXPOSE 2181 2888 3888' \
		--change 'ENTRYPOINT ["/docker-entrypoint.sh"]' \
		--change 'CMD ["zkServer.sh", "start-foreground"]'
}

build_postgres() {
	bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$bindir" ] && [ -x "$bindir/postgres" ] && [ -x "$bindir/initdb" ] ||
		die "no /usr/lib/postgresql/<version>/bin/postgres (apt-get install postgresql)"
	pglib=$(dirname "$bindir")
	major=$(basename "$pglib")
	share=/usr/share/postgresql/$major
	[ -d "$share" ] || die "$share not found (apt-get install postgresql)"
	[ -d /usr/share/zoneinfo ] || die "/usr/share/zoneinfo not found (apt-get install tzdata)"
	# The modules the server may load, without the JIT's (it links LLVM: 100 MB; jit is off).
	mods=$(ls "$pglib"/lib/*.so | grep -v llvmjit)
	# shellcheck disable=SC2086
	hash=$(fingerprint "$bindir/postgres" "$bindir/initdb" "$bindir/pg_basebackup" "$share/postgres.bki" /bin/dash $mods)
	if current lockchaos/postgres "$hash"; then
		return
	fi
	root="$work/postgres"
	base "$root"
	# shellcheck disable=SC2086
	add "$root" "$bindir/postgres" "$bindir/initdb" "$bindir/pg_basebackup" $mods
	mkdir -p "$root$share" "$root/usr/share/zoneinfo" "$root/var/lib/postgresql"
	cp -a "$share/." "$root$share/"
	cp -a /usr/share/zoneinfo/. "$root/usr/share/zoneinfo/"
	# The files are root's (docker import): the server's user makes its data dir in a sticky dir.
	chmod 1777 "$root/var/lib/postgresql"
	# The data dir, made here when this runs as root and the host has the postgres user (Debian's
	# package makes it): a container then starts in about a second, where initdb at its first
	# start took two more (BENCHMARKS.md "Cost of a run"). Owned by the image's postgres (1001).
	# Elsewhere the entrypoint's initdb makes it at the first start, as before.
	owner_map="" group_map=""
	if [ "$(id -u)" = 0 ] && id postgres >/dev/null 2>&1; then
		chmod 755 "$work"
		runuser -u postgres -- "$bindir/initdb" -D "$root/var/lib/postgresql/data" -U postgres -A trust -E UTF8 \
			--locale=C --no-instructions --no-sync >"$work/initdb.log" 2>&1 ||
			{ cat "$work/initdb.log" >&2; die "initdb failed"; }
		echo "host all all all trust" >>"$root/var/lib/postgresql/data/pg_hba.conf"
		owner_map="$work/owner-map" group_map="$work/group-map"
		echo "+$(id -u postgres) postgres:1001" >"$owner_map"
		echo "+$(id -g postgres) postgres:1001" >"$group_map"
	fi
	cat >"$root/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
# lockchaos/postgres: what the official postgres image does for lockchaos. Run it with --user
# postgres; the data dir, unless the image was built with one, is made by initdb at the first
# start (kept when the container is started again, with POSTGRES_INITDB_ARGS), and every address is let in with POSTGRES_HOST_AUTH_METHOD
# (trust by default here).
set -e
if [ "${1#-}" != "$1" ]; then set -- postgres "$@"; fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
	auth=${POSTGRES_HOST_AUTH_METHOD:-trust}
	# shellcheck disable=SC2086
	initdb -D "$PGDATA" -U "${POSTGRES_USER:-postgres}" -A "$auth" -E UTF8 --locale=C --no-instructions $POSTGRES_INITDB_ARGS >/dev/null
	echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
fi
exec "$@"
EOF
	chmod 755 "$root/docker-entrypoint.sh"
	OWNER_MAP=$owner_map GROUP_MAP=$group_map import lockchaos/postgres "$hash" "$root" \
		--change "ENV PATH=$bindir:/usr/bin:/bin" \
		--change 'ENV PGDATA=/var/lib/postgresql/data' \
		--change 'WORKDIR /var/lib/postgresql' \
		--change 'EXPOSE 5432' \
		--change 'ENTRYPOINT ["/docker-entrypoint.sh"]' \
		--change 'CMD ["postgres"]'
}

build_mariadb() {
	bin=/usr/sbin/mariadbd
	install=/usr/bin/mariadb-install-db
	[ -x "$bin" ] && [ -x "$install" ] || die "no $bin or $install (apt-get install mariadb-server)"
	share=/usr/share/mysql
	hash=$(fingerprint "$bin" "$install" "$share/mysql_system_tables.sql" "$share/english/errmsg.sys" /bin/dash)
	if current lockchaos/mariadb "$hash"; then
		return
	fi
	root="$work/mariadb"
	base "$root"
	add "$root" "$bin"
	mkdir -p "$root$share" "$root/var/lib/mysql" "$root/run/mysqld"
	cp -a "$share/english" "$share/charsets" "$root$share/"
	# The data dir, made here: the system tables (no test database, no time zones), then root
	# and an anonymous account (clients log in under their own names: user-level locks need no
	# privilege) on every address, as the container's clients come from the network's gateway.
	# The same small InnoDB files as the local backend's (cluster/mariadb.go).
	cnf="$work/mariadb.cnf"
	printf '%s\n' '[mariadbd]' 'innodb_data_file_path = ibdata1:12M:autoextend' 'innodb_log_file_size = 8M' \
		'innodb_buffer_pool_size = 16M' 'skip-name-resolve' >"$cnf"
	"$install" --defaults-file="$cnf" --user="$(id -un)" --datadir="$root/var/lib/mysql" \
		--auth-root-authentication-method=normal --skip-test-db --skip-name-resolve >"$work/mariadb-install.log" 2>&1 ||
		{ cat "$work/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
	printf '%s\n' 'FLUSH PRIVILEGES;' "CREATE USER 'root'@'%';" "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;" \
		"CREATE USER ''@'%';" "DROP USER IF EXISTS 'root'@'$(hostname)';" |
		"$bin" --defaults-file="$cnf" --user="$(id -un)" --datadir="$root/var/lib/mysql" --bootstrap \
			--log-warnings=0 >"$work/mariadb-bootstrap.log" 2>&1 ||
		{ cat "$work/mariadb-bootstrap.log" >&2; die "adding the accounts failed"; }
	rm -f "$root"/var/lib/mysql/*.err
	import lockchaos/mariadb "$hash" "$root" \
		--change 'ENV PATH=/usr/sbin:/usr/bin:/bin' \
		--change 'WORKDIR /var/lib/mysql' \
		--change 'EXPOSE 3306' \
		--change 'CMD ["mariadbd", "--no-defaults", "--user=root", "--datadir=/var/lib/mysql", "--skip-name-resolve"]'
}

build_pgbouncer() {
	bin=/usr/sbin/pgbouncer
	[ -x "$bin" ] || die "no $bin (apt-get install pgbouncer)"
	hash=$(fingerprint "$bin" /bin/dash)
	if current lockchaos/pgbouncer "$hash"; then
		return
	fi
	root="$work/pgbouncer"
	base "$root"
	add "$root" "$bin"
	# pgbouncer refuses to run as root: the container runs as postgres, its files in /tmp.
	import lockchaos/pgbouncer "$hash" "$root" \
		--change 'ENV PATH=/usr/sbin:/usr/bin:/bin' \
		--change 'USER postgres' \
		--change 'WORKDIR /tmp' \
		--change 'EXPOSE 6432' \
		--change 'CMD ["pgbouncer", "--version"]'
}

build_etcd() {
	one_binary etcd lockchaos/etcd etcd-server || return 0
	import lockchaos/etcd "$hash" "$root" \
		--change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
		--change 'WORKDIR /data' \
		--change 'EXPOSE 2379 2380' \
		--change 'CMD ["etcd"]'
}

for w in $want; do
	t0=$(date +%s)
	"build_$w"
	echo "images/build.sh: $w took $(($(date +%s) - t0))s"
done
