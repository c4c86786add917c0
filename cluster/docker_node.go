package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// dnode is one server container and how to (re)start it.
type dnode struct {
	Node      // Addr is the published address, 127.0.0.1:hostPort
	c         *docker
	container string // the container's name, also its DNS name on the run network
	inner     string // container:port, how other nodes (and Sentinel's answers) name it
	port      int    // the server's port inside the container
	hostPort  int
	image     string
	// run returns the command (nil: the image's) and environment of a start; restart as in
	// node.prepare.
	run          func(restart bool) (cmd, env []string)
	ready        func(ctx context.Context) error
	readyTimeout time.Duration
	// reuse makes Restart start the same container again, keeping its files (a sentinel's state,
	// a ZooKeeper member's data dir) as the local backend keeps the node's dir; otherwise Restart
	// runs a fresh container (redis: empty).
	reuse bool

	mu        sync.Mutex
	res       *dockertest.Resource
	restarted bool // guarded by mu; ready reads it
	closed    bool
	// unwatch stops the goroutine that reports a container dying by itself.
	unwatch func()
}

func (c *docker) newNode(name string, kind Kind, port, hostPort int, image string) *dnode {
	container := c.prefix() + "-" + name
	return &dnode{
		Node:         Node{Name: name, Kind: kind, Addr: localAddr(hostPort)},
		c:            c,
		container:    container,
		inner:        innerAddr(container, port),
		port:         port,
		hostPort:     hostPort,
		image:        image,
		readyTimeout: 20 * time.Second,
	}
}

// launch starts the container (or, for a reused node's Restart, starts it again) and waits until
// the server is ready. Call with n.mu held.
func (n *dnode) launch(ctx context.Context, restart bool) error {
	if n.closed {
		return fmt.Errorf("%s: %w", n.Name, errSpawnerClosed)
	}
	n.restarted = restart
	if err := n.start(ctx, restart); err != nil {
		if isPortTaken(err) {
			err = fmt.Errorf("%w (%w)", err, errAddrInUse)
		}
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	if err := n.waitReady(ctx); err != nil {
		n.stopContainer()
		return fmt.Errorf("%s (%s) did not start: %w%s", n.Name, n.Addr, err, n.logTail())
	}
	n.watch()
	return nil
}

func (n *dnode) start(ctx context.Context, restart bool) error {
	cl := n.c.pool.Client
	if restart && n.reuse && n.res != nil {
		return cl.StartContainerWithContext(n.res.Container.ID, nil, ctx)
	}
	if n.res != nil {
		if err := cl.RemoveContainer(dc.RemoveContainerOptions{ID: n.res.Container.ID, Force: true, RemoveVolumes: true, Context: ctx}); err != nil && !isNoSuchContainer(err) {
			return fmt.Errorf("remove the old container: %w", err)
		}
		n.res = nil
	}
	cmd, env := n.run(restart)
	repo, tag := splitImage(n.image)
	portID := fmt.Sprintf("%d/tcp", n.port)
	res, err := n.c.pool.RunWithOptions(&dockertest.RunOptions{
		Name:         n.container,
		Hostname:     n.container,
		Repository:   repo,
		Tag:          tag,
		Cmd:          cmd,
		Env:          env,
		NetworkID:    n.c.net.Network.ID,
		Labels:       n.c.labels(n.Name),
		ExposedPorts: []string{portID},
		// 127.0.0.1 only: nothing of a run is reachable from other machines.
		PortBindings: map[dc.Port][]dc.PortBinding{dc.Port(portID): {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(n.hostPort)}}},
	}, func(hc *dc.HostConfig) {
		// dockertest publishes every exposed port (on all interfaces) unless told not to.
		hc.PublishAllPorts = false
		hc.RestartPolicy = dc.NeverRestart()
	})
	if err != nil {
		// RunWithOptions creates before it starts: a failed start leaves a container behind.
		_ = n.c.pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: n.container, Force: true, RemoveVolumes: true})
		return err
	}
	n.res = res
	return nil
}

func (n *dnode) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, n.readyTimeout)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var last error
	for i := 0; ; i++ {
		if last = n.ready(ctx); last == nil {
			return nil
		}
		if i%10 == 9 { // a dead container cannot become ready: say so early
			if st, err := n.c.pool.Client.InspectContainerWithContext(n.res.Container.ID, ctx); err == nil && !st.State.Running {
				return fmt.Errorf("container exited (code %d): %w", st.State.ExitCode, last)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", n.readyTimeout, last)
		case <-tick.C:
		}
	}
}

// watch reports to Spec.Log when the container dies by itself. Call with n.mu held.
func (n *dnode) watch() {
	if n.c.spec.Log == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	id := n.res.Container.ID
	go func() {
		defer close(done)
		code, err := n.c.pool.Client.WaitContainerWithContext(id, ctx)
		if ctx.Err() != nil {
			return // we stopped it, or stopped watching
		}
		n.c.report(fmt.Sprintf("lockchaos: %s (%s, container %s) exited by itself: code %d %v%s\n", n.Name, n.Addr, n.container, code, err, n.logTail()))
	}()
	n.unwatch = func() {
		cancel()
		<-done
	}
}

func (n *dnode) stopWatching() {
	if n.unwatch != nil {
		n.unwatch()
		n.unwatch = nil
	}
}

// stopContainer SIGKILLs the container and waits until docker says it stopped. Call with n.mu held.
func (n *dnode) stopContainer() {
	n.stopWatching()
	if n.res == nil {
		return
	}
	cl := n.c.pool.Client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A paused container dies from SIGKILL too, as a stopped process does.
	err := cl.KillContainer(dc.KillContainerOptions{ID: n.res.Container.ID, Signal: dc.SIGKILL, Context: ctx})
	var notRunning *dc.ContainerNotRunning
	if err != nil && !errors.As(err, &notRunning) {
		return
	}
	_, _ = cl.WaitContainerWithContext(n.res.Container.ID, ctx)
}

func (n *dnode) kill(closing bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = n.closed || closing
	n.stopContainer()
}

// close marks the node closed so that a racing Restart cannot start it again; Close removes the
// containers by label afterwards.
func (n *dnode) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	n.stopWatching()
}

func (n *dnode) restart(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopContainer()
	return n.launch(ctx, true)
}

func (n *dnode) pause(ctx context.Context, on bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.res == nil {
		return fmt.Errorf("%s is not running", n.Name)
	}
	var err error
	if on {
		err = n.c.pool.Client.PauseContainer(n.res.Container.ID)
	} else {
		err = n.c.pool.Client.UnpauseContainer(n.res.Container.ID)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}

// logTail returns the container's last lines of output, for error messages.
func (n *dnode) logTail() string {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := n.c.pool.Client.Logs(dc.LogsOptions{
		Context: ctx, Container: n.container, OutputStream: &out, ErrorStream: &out,
		Stdout: true, Stderr: true, Tail: "15",
	})
	if err != nil || out.Len() == 0 {
		return ""
	}
	return fmt.Sprintf("\n--- docker logs %s (tail) ---\n%s", n.container, strings.TrimRight(out.String(), "\n"))
}

// splitImage splits "redis:7" into "redis", "7"; no tag means latest. A registry's port
// ("host:5000/redis") is not a tag.
func splitImage(image string) (repo, tag string) {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i], image[i+1:]
	}
	return image, "latest"
}

func isPortTaken(err error) bool {
	s := err.Error()
	return strings.Contains(s, "address already in use") || strings.Contains(s, "port is already allocated")
}

func isNoSuchContainer(err error) bool {
	var e *dc.NoSuchContainer
	return errors.As(err, &e)
}
