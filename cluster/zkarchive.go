package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A ZooKeeper member's JVM spends most of its start loading and verifying classes: with three
// members starting at once on two cores, the ensemble took ≈ 1.4 s to serve here, ≈ 1.1 s with
// the classes a server loads taken from an archive (Java's AppCDS), at three quarters of the CPU.
// The archive is made once per machine, JVM and jar, by a standalone server that is started,
// asked whether it serves and stopped (-XX:ArchiveClassesAtExit), and kept in the user's cache.

var zkArchive struct {
	once sync.Once
	flag string // -XX:SharedArchiveFile=…, or "" when none could be made
}

// zkArchiveFlag returns the JVM flag that starts a member from the class archive, making the
// archive on the first call; "" when it cannot be made (members then start without one: only
// slower). Its own bound is 20 s, not a caller's ctx: one cell's end must not leave the others
// without.
func zkArchiveFlag() string {
	zkArchive.once.Do(func() {
		path, err := zkArchivePath()
		if err != nil {
			return
		}
		if _, err := os.Stat(path); err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := makeZKArchive(ctx, path); err != nil {
				return
			}
		}
		zkArchive.flag = "-XX:SharedArchiveFile=" + path
	})
	return zkArchive.flag
}

// zkArchivePath names the archive for this JVM, this jar and these flags: a new one of any of
// them makes a new archive (an archive the JVM finds stale it ignores, but would never remake).
func zkArchivePath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	jar, err := os.Stat(zookeeperJar)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintln(h, javaVersion(javaBin), zookeeperJar, jar.Size(), jar.ModTime().UnixNano(), slf4jSimpleJar)
	fmt.Fprintln(h, strings.Join(zkJVMFlags, " "))
	return filepath.Join(dir, "lockchaos", fmt.Sprintf("zookeeper-%x.jsa", h.Sum(nil)[:8])), nil
}

// makeZKArchive runs a standalone server on a free port until it serves, stops it (the JVM
// writes the archive as it exits) and renames the archive to path.
func makeZKArchive(ctx context.Context, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "lockchaos-zkarchive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	addr := localAddr(ports[0])
	cfg, err := writeConfig(dir, "zoo.cfg", []string{"tickTime=100", "dataDir=" + filepath.Join(dir, "data"),
		fmt.Sprintf("clientPort=%d", ports[0]), "clientPortAddress=127.0.0.1", "admin.enableServer=false",
		"4lw.commands.whitelist=*"})
	if err != nil {
		return err
	}
	// Written next to path and renamed into place whole: a concurrent lockchaos sees no
	// archive, or this one.
	tmp := filepath.Join(filepath.Dir(path), filepath.Base(dir)+".jsa")
	defer os.Remove(tmp)
	argv := append(append([]string{}, zkJVMFlags...), "-XX:ArchiveClassesAtExit="+tmp,
		"-Dzookeeper.log.dir="+dir, "-cp", zookeeperJar+":"+slf4jSimpleJar,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg)
	cmd := exec.Command(javaBin, argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	served := func() bool {
		for ctx.Err() == nil {
			if _, err := zk4lw(ctx, addr, "ruok"); err == nil {
				return true
			}
			select {
			case <-exited:
				return false
			case <-time.After(50 * time.Millisecond):
			}
		}
		return false
	}()
	_ = cmd.Process.Signal(syscall.SIGTERM) // the JVM writes the archive in its exit
	select {
	case <-exited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		return ctx.Err()
	}
	if !served {
		return fmt.Errorf("the standalone ZooKeeper for the class archive did not serve")
	}
	return os.Rename(tmp, path)
}
