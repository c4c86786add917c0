package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A port freePorts picked can be taken by another process before our server binds it. Our server
// then exits ("address already in use"), but the readiness probe may already have reached the
// other process's listener — another run's server on a loaded machine — and the run would start
// on a node that is not ours, to see it "exit by itself" moments later. So a local server counts
// as ready only when its port's listener belongs to its own process group (the server and any
// process it forks: Setpgid in spawn).

// ownsListener reports whether a process in process group pgid listens on TCP port. It answers
// true when it cannot tell (no /proc, no listener visible in this network namespace): the probe
// that answered is trusted then, as before.
func ownsListener(pgid, port int) bool {
	inodes := listenerInodes(port)
	if len(inodes) == 0 {
		return true
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || processGroup(pid) != pgid {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if err != nil {
				continue
			}
			if ino, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(ino, "]")] {
				return true
			}
		}
	}
	return false
}

// listenerInodes is the socket inodes listening on TCP port, from /proc/net/tcp and tcp6.
func listenerInodes(port int) map[string]bool {
	want := fmt.Sprintf(":%04X", port)
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) > 9 && strings.HasSuffix(f[1], want) && f[3] == "0A" { // 0A: LISTEN
				inodes[f[9]] = true
			}
		}
	}
	return inodes
}

// processGroup is process pid's process group, or -1 when it cannot be read.
func processGroup(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	// pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so split after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return -1
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return g
}
