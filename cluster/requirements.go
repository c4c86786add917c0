package cluster

// Requirement is one thing a backend needs on this machine, for lockchaos doctor.
type Requirement struct {
	Name   string // what is needed: "redis-server", "/usr/share/java/zookeeper.jar"
	OK     bool
	Detail string // the path and version found, or what is wrong
	Fix    string // how to get it, when !OK
}
