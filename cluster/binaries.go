package cluster

import (
	"fmt"
	"os"
	"os/exec"
)

// Where the local backend finds its servers (Debian packages redis-server, redis-sentinel,
// zookeeper, libslf4j-java, default-jre-headless). Variables so a test or a packager can point
// elsewhere.
var (
	redisServerBin   = "redis-server"
	redisSentinelBin = "redis-sentinel"
	javaBin          = "java"
	zookeeperJar     = "/usr/share/java/zookeeper.jar"
	slf4jSimpleJar   = "/usr/share/java/slf4j-simple.jar"
	slf4jAPIJar      = "/usr/share/java/slf4j-api.jar"
)

// checkBinaries returns an ErrMissingBinary error naming the first missing piece and its fix.
func checkBinaries(topology string) error {
	var need []Requirement
	switch topology {
	case RedisSingle, RedisMulti:
		need = []Requirement{checkCommand(redisServerBin, "redis-server")}
	case RedisSentinel:
		need = []Requirement{checkCommand(redisServerBin, "redis-server"), checkCommand(redisSentinelBin, "redis-sentinel")}
	case ZooKeeper:
		need = []Requirement{checkCommand(javaBin, "default-jre-headless"), checkFile(zookeeperJar, "zookeeper"), checkFile(slf4jAPIJar, "libslf4j-java")}
	default:
		return extraBinaries(topology)
	}
	for _, r := range need {
		if !r.OK {
			return fmt.Errorf("%w: %s (%s)", ErrMissingBinary, r.Detail, r.Fix)
		}
	}
	return nil
}

func checkCommand(bin, pkg string) Requirement {
	r := Requirement{Name: bin, Fix: "install it: apt-get install " + pkg + ", or run make deps"}
	path, err := exec.LookPath(bin)
	if err != nil {
		r.Detail = bin + " not found in PATH"
		return r
	}
	r.OK, r.Detail = true, path
	return r
}

func checkFile(path, pkg string) Requirement {
	r := Requirement{Name: path, Fix: "install it: apt-get install " + pkg + ", or run make deps"}
	if _, err := os.Stat(path); err != nil {
		r.Detail = path + " not found"
		return r
	}
	r.OK, r.Detail = true, path
	return r
}
