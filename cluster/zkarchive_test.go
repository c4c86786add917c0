package cluster

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The class archive is made once and a member's JVM loads ZooKeeper's classes from it.
func TestZooKeeperClassArchive(t *testing.T) {
	needServers(t, ZooKeeper)
	flag := zkArchiveFlag()
	path, ok := strings.CutPrefix(flag, "-XX:SharedArchiveFile=")
	if !ok {
		t.Fatalf("no class archive: flag %q", flag)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if again := zkArchiveFlag(); again != flag {
		t.Errorf("second call: %q, want %q", again, flag)
	}
	// A member's command line with the archive, its class loading logged: the server's main
	// class comes from the archive ("shared objects file (top)" is the dynamic archive).
	argv := append(append([]string{}, zkJVMFlags...), flag, "-Xlog:class+load=info",
		"-cp", zookeeperJar+":"+slf4jSimpleJar, "org.apache.zookeeper.server.quorum.QuorumPeerMain", "/nonexistent/zoo.cfg")
	out, _ := exec.Command(javaBin, argv...).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "org.apache.zookeeper.server.quorum.QuorumPeerMain ") {
			if !strings.Contains(line, "shared objects file (top)") {
				t.Errorf("the main class was not loaded from the archive: %s", line)
			}
			return
		}
	}
	t.Fatalf("no class loading line for QuorumPeerMain in:\n%.2000s", out)
}
