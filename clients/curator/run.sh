#!/bin/sh
# Runs the compiled CuratorLock (make clients) on Debian's Curator, ZooKeeper client and their deps.
J=/usr/share/java
CP="$(dirname "$0")/build:$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar"
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Xmx128m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$CP" CuratorLock
