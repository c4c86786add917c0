package external

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	toxiclient "github.com/lockchaos/lockchaos/third_party/toxiproxy/client"

	"github.com/lockchaos/lockchaos/cluster"
)

// A run killed with SIGKILL cannot delete its proxies. Their names say which process on which
// host made them (the run id), so a later run on the same host deletes those whose process is
// gone, and never those of a live run or of another host, whose liveness it cannot know.

// NewRunID returns a run id for the external backend: "<host hash>-<pid>-<random>", so that the
// names of its proxies say which process on which host made them.
func NewRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", hostHash(), os.Getpid(), hex.EncodeToString(b))
}

func hostHash() string {
	host, _ := os.Hostname()
	h := fnv.New32a()
	_, _ = io.WriteString(h, host)
	return fmt.Sprintf("%08x", h.Sum32())
}

// staleRun reports whether a proxy name is lockchaos's, made on this host by a process that is gone.
func staleRun(name string) bool {
	rest, ok := strings.CutPrefix(name, cluster.ProxyPrefix)
	if !ok {
		return false
	}
	parts := strings.SplitN(rest, "-", 4)
	if len(parts) < 4 || parts[0] != hostHash() {
		return false // another host's run, or not our naming: its liveness is unknown here
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	return !pidAlive(pid)
}

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// cleanStale removes, from every toxiproxy API of the file, the proxies of runs on this host
// whose process is gone, and says so on log.
func cleanStale(ctx context.Context, f *cluster.ExternalFile, log io.Writer) {
	for _, a := range apis(f) {
		n, err := removeProxies(ctx, toxiclient.NewClient(a), staleRun)
		if log == nil {
			continue
		}
		if err != nil {
			fmt.Fprintf(log, "lockchaos: removing stale lockchaos proxies from toxiproxy %s: %v\n", a, err)
		} else if n > 0 {
			fmt.Fprintf(log, "lockchaos: removed %d stale lockchaos proxies of killed runs from toxiproxy %s\n", n, a)
		}
	}
}

// ProxyCount is what a toxiproxy-server holds of lockchaos's: all its proxies, and those of runs
// on this host whose process is gone (the next run removes them).
type ProxyCount struct {
	API        string
	All, Stale int
	Err        error
}

// CountProxies counts lockchaos's proxies on every toxiproxy API of f, for doctor.
func CountProxies(ctx context.Context, f *cluster.ExternalFile) []ProxyCount {
	var out []ProxyCount
	for _, a := range apis(f) {
		pc := ProxyCount{API: a}
		ps, err := api(ctx, toxiclient.NewClient(a).Proxies)
		pc.Err = err
		for name := range ps {
			if strings.HasPrefix(name, cluster.ProxyPrefix) {
				pc.All++
				if staleRun(name) {
					pc.Stale++
				}
			}
		}
		out = append(out, pc)
	}
	return out
}
