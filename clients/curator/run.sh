#!/bin/sh
# Runs the compiled CuratorLock (make clients) on Debian's Curator, ZooKeeper client and their deps.
J=/usr/share/java
CP="$(dirname "$0")/build:$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
# -XX:-UsePerfData: no /tmp/hsperfdata file, whose "locked by another process" warning a JVM printed
# on stdout in make test (a PID reused by a concurrent JVM), breaking the protocol's stdout; and the
# JVM's own log lines go to stderr, never to the protocol's stdout.
exec java -XX:-UsePerfData -Xlog:all=warning:stderr -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Xmx128m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$CP" CuratorLock
