package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/lockchaos/lockchaos/cluster"
)

// Labels on every container and network of the docker backend. The owner label names the
// harness process, so leftovers of a run whose harness died (SIGKILL leaves no chance to clean
// up) can be told from a live run's: "host/boot id/pid/process start time" (the start time
// guards against a reused pid).
const (
	labelApp   = "lockchaos" // always "1"
	labelRun   = "lockchaos.run"
	labelOwner = "lockchaos.owner"
	labelNode  = "lockchaos.node"
)

// labels returns the labels of the run's network (node "") or of a node's container.
func (b *docker) labels(node string) map[string]string {
	l := map[string]string{labelApp: "1", labelRun: b.id, labelOwner: ownerID(os.Getpid())}
	if node != "" {
		l[labelNode] = node
	}
	return l
}

func ownerID(pid int) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%s/%d/%s", host, bootID(), pid, procStart(pid))
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// procStart returns a process's start time in clock ticks since boot (field 22 of
// /proc/PID/stat), or "" when there is no such process.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) may hold spaces and parentheses; fields restart after the last ')'.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ownerGone says whether the harness process named by an owner label is dead. Labels from another
// host are never judged gone: that host's runs are its own business (a shared remote daemon).
func ownerGone(owner string) bool {
	f := strings.Split(owner, "/")
	if len(f) != 4 {
		return true // ours by the lockchaos label, but unowned: nobody will remove it
	}
	if host, _ := os.Hostname(); f[0] != host {
		return false
	}
	if f[1] != bootID() {
		return true // the machine rebooted since
	}
	pid, err := strconv.Atoi(f[2])
	return err != nil || procStart(pid) != f[3]
}

// ErrNoDaemon is wrapped when the docker daemon is not reachable; Start wraps it with
// cluster.ErrMissingBinary too, since the fix is on the user's side.
var ErrNoDaemon = errors.New("lockchaos: docker daemon not reachable")

// dockerPool connects to the docker daemon (DOCKER_HOST, or the default socket) and pings it.
func dockerPool(ctx context.Context) (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err = pool.Client.PingWithContext(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w: %v (start it: systemctl start docker, or set DOCKER_HOST; or use --backend local)", cluster.ErrMissingBinary, ErrNoDaemon, err)
	}
	return pool, nil
}

// checkImage returns an ErrMissingBinary error when image is not present: the backend never pulls
// (no registry is reachable where lockchaos is developed, and a pull in the middle of a run would
// count against its start-up time).
func checkImage(pool *dockertest.Pool, image string) error {
	if _, err := pool.Client.InspectImage(image); err != nil {
		if errors.Is(err, dc.ErrNoSuchImage) && strings.HasPrefix(image, "lockchaos/") {
			return fmt.Errorf("%w: docker image %s not present: run make images (builds it offline from the host's packages)", cluster.ErrMissingBinary, image)
		}
		if errors.Is(err, dc.ErrNoSuchImage) {
			return fmt.Errorf("%w: docker image %s not present: run make images (builds lockchaos/redis, lockchaos/zookeeper, lockchaos/postgres, lockchaos/mariadb, lockchaos/pgbouncer and lockchaos/etcd offline) and pass --redis-image lockchaos/redis --zookeeper-image lockchaos/zookeeper --postgres-image lockchaos/postgres --mariadb-image lockchaos/mariadb --etcd-image lockchaos/etcd, or docker pull %s", cluster.ErrMissingBinary, image, image)
		}
		return fmt.Errorf("inspect docker image %s: %w", image, err)
	}
	return nil
}

// Clean removes the containers and networks that runs of the docker backend left behind
// when their harness died (SIGKILL, a crash): those labelled lockchaos=1 whose owner process is
// gone. Live runs, also other processes' on this machine, are left alone. It returns how many
// containers and networks it removed. lockchaos doctor --clean calls it; Start does the same.
func Clean(ctx context.Context) (removed int, err error) {
	pool, err := dockerPool(ctx)
	if err != nil {
		return 0, err
	}
	return cleanDocker(ctx, pool)
}

func cleanDocker(ctx context.Context, pool *dockertest.Pool) (int, error) {
	return removeLabelled(ctx, pool, labelApp+"=1", func(labels map[string]string) bool {
		return ownerGone(labels[labelOwner])
	})
}

// removeRun removes every container and the network of one run.
func removeRun(ctx context.Context, pool *dockertest.Pool, id string) error {
	_, err := removeLabelled(ctx, pool, labelRun+"="+id, func(map[string]string) bool { return true })
	return err
}

// removeLabelled force-removes the containers (in parallel), then the networks, that carry label
// and that pick says to remove.
func removeLabelled(ctx context.Context, pool *dockertest.Pool, label string, pick func(map[string]string) bool) (int, error) {
	cl := pool.Client
	cs, err := cl.ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {label}}, Context: ctx})
	if err != nil {
		return 0, fmt.Errorf("list containers labelled %s: %w", label, err)
	}
	var (
		mu      sync.Mutex
		errs    []error
		removed int
		wg      sync.WaitGroup
	)
	for _, ct := range cs {
		if !pick(ct.Labels) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cl.RemoveContainer(dc.RemoveContainerOptions{ID: ct.ID, Force: true, RemoveVolumes: true, Context: ctx})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				removed++
			case !isNoSuchContainer(err):
				errs = append(errs, fmt.Errorf("remove container %s: %w", strings.Join(ct.Names, ","), err))
			}
		}()
	}
	wg.Wait()
	nets, err := cl.FilteredListNetworks(dc.NetworkFilterOpts{"label": {label: true}})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("list networks labelled %s: %w", label, err))...)
	}
	for _, nw := range nets {
		if !pick(nw.Labels) {
			continue
		}
		if err := cl.RemoveNetwork(nw.ID); err != nil {
			var nf *dc.NoSuchNetwork
			if !errors.As(err, &nf) {
				errs = append(errs, fmt.Errorf("remove network %s: %w", nw.Name, err))
			}
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
