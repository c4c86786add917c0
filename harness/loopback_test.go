package harness_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// TestListenersAreLoopbackOnly starts every topology with proxies and checks that every listening
// socket of this process and of the servers it started is bound to 127.0.0.1: nothing lockchaos
// starts is reachable from another machine.
func TestListenersAreLoopbackOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real servers")
	}
	for _, topo := range cluster.Topologies {
		t.Run(topo, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := cluster.Start(ctx, cluster.Spec{Topology: topo, Clients: 2, Proxies: true, Dir: t.TempDir()})
			if errors.Is(err, cluster.ErrMissingBinary) {
				testenv.MissingServer(t, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pids := ourProcesses()
			if len(pids) < 2 {
				t.Fatalf("found no server process among our children: the test would prove nothing")
			}
			listeners := listeningSockets(t)
			seen := 0
			for pid := range pids {
				for _, inode := range socketInodes(pid) {
					addr, ok := listeners[inode]
					if !ok {
						continue
					}
					seen++
					if !strings.HasPrefix(addr, "127.0.0.1:") {
						t.Errorf("process %d listens on %s, not on loopback", pid, addr)
					}
				}
			}
			if seen < len(c.Nodes())+1 {
				t.Errorf("found %d listeners for %d nodes plus proxies: the scan missed some", seen, len(c.Nodes()))
			}
			// TCP only: a unix socket in a node dir, under a test's long temp dir, may exceed the
			// 107 bytes a socket path can have (postgres, pgbouncer and mariadb make none).
			unix := unixListeners()
			for pid := range pids {
				for _, inode := range socketInodes(pid) {
					if path, ok := unix[inode]; ok {
						t.Errorf("process %d listens on the unix socket %s", pid, path)
					}
				}
			}
		})
	}
}

// ourProcesses returns this process and its descendants.
func ourProcesses() map[int]bool {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// stat: pid (comm) state ppid ...; comm may hold spaces, so split after the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	ours := map[int]bool{os.Getpid(): true}
	for changed := true; changed; {
		changed = false
		for pid, pp := range parent {
			if ours[pp] && !ours[pid] {
				ours[pid], changed = true, true
			}
		}
	}
	return ours
}

// listeningSockets maps socket inodes to "ip:port" for every TCP socket in LISTEN state.
func listeningSockets(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A = LISTEN
				continue
			}
			out[fields[9]] = decodeAddr(fields[1])
		}
		f.Close()
	}
	if len(out) == 0 {
		t.Fatal("no listening socket found in /proc/net/tcp*")
	}
	return out
}

// unixListeners maps socket inodes to paths for every unix socket in LISTEN state bound to a path
// (abstract ones, "@...", reach no file and no other machine).
func unixListeners() map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 = __SO_ACCEPTCON (listening).
		f := strings.Fields(line)
		if len(f) < 8 || f[3] != "00010000" || strings.HasPrefix(f[7], "@") {
			continue
		}
		out[f[6]] = f[7]
	}
	return out
}

// decodeAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080" (IPv6: "[hex]:port").
func decodeAddr(s string) string {
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, _ := strconv.ParseUint(hexPort, 16, 16)
	if len(hexIP) != 8 {
		if hexIP == "0000000000000000FFFF00000100007F" {
			return "127.0.0.1:" + strconv.Itoa(int(port))
		}
		return "[" + hexIP + "]:" + strconv.Itoa(int(port))
	}
	v, _ := strconv.ParseUint(hexIP, 16, 32)
	ip := []string{strconv.Itoa(int(v & 0xff)), strconv.Itoa(int(v >> 8 & 0xff)), strconv.Itoa(int(v >> 16 & 0xff)), strconv.Itoa(int(v >> 24))}
	return strings.Join(ip, ".") + ":" + strconv.Itoa(int(port))
}

// socketInodes lists the socket inodes a process has open.
func socketInodes(pid int) []string {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]"))
		}
	}
	return out
}
