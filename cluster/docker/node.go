package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/lockchaos/lockchaos/cluster"
)

// dockerNode is a node's server as a container.
type dockerNode struct {
	b        *docker
	s        *cluster.Server
	c        cluster.Container // how servers of its kind run in a container
	runs     bool              // c was registered: the backend runs the kind
	name     string            // the container's name, also its DNS name on the run network
	hostPort int
	image    string

	res *dockertest.Resource
	// unwatch stops the goroutine that reports a container dying by itself.
	unwatch func()
}

func (m *dockerNode) Start(ctx context.Context, restart bool) error {
	err := m.run(ctx, restart)
	if err != nil && isPortTaken(err) {
		err = fmt.Errorf("%w (%w)", err, cluster.ErrAddrInUse)
	}
	return err
}

// run starts the container (or, for a reused node's Restart, starts it again).
func (m *dockerNode) run(ctx context.Context, restart bool) error {
	cl := m.b.pool.Client
	if !m.runs {
		return fmt.Errorf("the docker backend runs no %s server (use --backend local)", m.s.Kind())
	}
	if restart && (m.c.Reuse || m.s.Keep()) && m.res != nil {
		return cl.StartContainerWithContext(m.res.Container.ID, nil, ctx)
	}
	if m.res != nil {
		if err := cl.RemoveContainer(dc.RemoveContainerOptions{ID: m.res.Container.ID, Force: true, RemoveVolumes: true, Context: ctx}); err != nil && !isNoSuchContainer(err) {
			return fmt.Errorf("remove the old container: %w", err)
		}
		m.res = nil
	}
	cmd, env := m.c.Command(m.b, m.s, restart)
	repo, tag := splitImage(m.image)
	portID := fmt.Sprintf("%d/tcp", m.c.Port)
	// 127.0.0.1 only: nothing of a run is reachable from other machines (the gateway's
	// address is this machine's own, on the run network).
	exposed := []string{portID}
	bindings := map[dc.Port][]dc.PortBinding{dc.Port(portID): {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(m.hostPort)}}}
	ports := m.s.Ports()
	for i, p := range m.s.GatewayPorts() {
		if i+1 >= len(ports) || m.b.gateway == "" {
			return fmt.Errorf("no host port or gateway to publish %s's port %d on", m.s.Name(), p)
		}
		id := fmt.Sprintf("%d/tcp", p)
		exposed = append(exposed, id)
		bindings[dc.Port(id)] = []dc.PortBinding{{HostIP: m.b.gateway, HostPort: strconv.Itoa(ports[i+1])}}
	}
	res, err := m.b.pool.RunWithOptions(&dockertest.RunOptions{
		Name:         m.name,
		Hostname:     m.name,
		User:         m.c.User,
		Repository:   repo,
		Tag:          tag,
		Cmd:          cmd,
		Env:          env,
		NetworkID:    m.b.net.Network.ID,
		Labels:       m.b.labels(m.s.Name()),
		ExposedPorts: exposed,
		PortBindings: bindings,
	}, func(hc *dc.HostConfig) {
		// dockertest publishes every exposed port (on all interfaces) unless told not to.
		hc.PublishAllPorts = false
		hc.RestartPolicy = dc.NeverRestart()
	})
	if err != nil {
		// RunWithOptions creates before it starts: a failed start leaves a container behind.
		_ = cl.RemoveContainer(dc.RemoveContainerOptions{ID: m.name, Force: true, RemoveVolumes: true})
		return err
	}
	m.res = res
	return nil
}

// Dead asks docker every tenth try: a dead container cannot become ready, so say so early.
func (m *dockerNode) Dead(ctx context.Context, try int, last error) error {
	if try%10 != 9 {
		return nil
	}
	if st, err := m.b.pool.Client.InspectContainerWithContext(m.res.Container.ID, ctx); err == nil && !st.State.Running {
		return fmt.Errorf("container exited (code %d): %w", st.State.ExitCode, last)
	}
	return nil
}

func (m *dockerNode) Exited() <-chan struct{} { return nil }

func (m *dockerNode) Failed(err error) error {
	m.Stop()
	return fmt.Errorf("%w%s", err, m.logTail())
}

// Watch reports to Spec.Log when the container dies by itself.
func (m *dockerNode) Watch() {
	report := m.s.Report()
	if report == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	id := m.res.Container.ID
	go func() {
		defer close(done)
		code, err := m.b.pool.Client.WaitContainerWithContext(id, ctx)
		if ctx.Err() != nil {
			return // we stopped it, or stopped watching
		}
		line := fmt.Sprintf("%s (%s, container %s) exited by itself: code %d", m.s.Name(), m.s.Addr(), m.name, code)
		if err != nil {
			line += " (" + err.Error() + ")"
		}
		report(line, m.logTail())
	}()
	m.unwatch = func() {
		cancel()
		<-done
	}
}

// Release only stops watching: Close removes the containers by label afterwards.
func (m *dockerNode) Release() {
	if m.unwatch != nil {
		m.unwatch()
		m.unwatch = nil
	}
}

// Stop SIGKILLs the container and waits until docker says it stopped. The container stays, so
// its logs can be read, until Restart replaces it or Close removes it.
func (m *dockerNode) Stop() {
	m.Release()
	if m.res == nil {
		return
	}
	cl := m.b.pool.Client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A paused container dies from SIGKILL too, as a stopped process does.
	err := cl.KillContainer(dc.KillContainerOptions{ID: m.res.Container.ID, Signal: dc.SIGKILL, Context: ctx})
	var notRunning *dc.ContainerNotRunning
	if err != nil && !errors.As(err, &notRunning) {
		return
	}
	_, _ = cl.WaitContainerWithContext(m.res.Container.ID, ctx)
}

func (m *dockerNode) Running() bool { return m.res != nil }

// Pause freezes every process in the container (docker pause), or unfreezes them.
func (m *dockerNode) Pause(on bool) error {
	if on {
		return m.b.pool.Client.PauseContainer(m.res.Container.ID)
	}
	return m.b.pool.Client.UnpauseContainer(m.res.Container.ID)
}

// logTail returns the container's last lines of output, for error messages.
func (m *dockerNode) logTail() string {
	b, err := m.output("15", 5*time.Second)
	if err != nil || len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("\n--- docker logs %s (tail) ---\n%s", m.name, strings.TrimRight(string(b), "\n"))
}

// SaveLog copies the current container's output: a restarted redis node is a fresh container,
// so its earlier life's output went with the old one.
func (m *dockerNode) SaveLog(w io.Writer) (bool, error) {
	if m.res == nil {
		return false, nil // never started
	}
	b, err := m.output("all", 10*time.Second)
	if err != nil {
		return false, fmt.Errorf("docker logs %s: %w", m.name, err)
	}
	if len(b) > cluster.SavedLogMax {
		b = b[len(b)-cluster.SavedLogMax:]
	}
	_, err = w.Write(b)
	return true, err
}

// output returns the container's stdout and stderr as docker keeps them, interleaved: the last
// tail lines ("all": everything).
func (m *dockerNode) output(tail string, timeout time.Duration) ([]byte, error) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := m.b.pool.Client.Logs(dc.LogsOptions{
		Context: ctx, Container: m.name, OutputStream: &out, ErrorStream: &out,
		Stdout: true, Stderr: true, Tail: tail,
	})
	return out.Bytes(), err
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
