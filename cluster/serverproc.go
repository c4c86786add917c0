package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What the one-server SQL topologies (postgres.go, mariadb.go) share: a server that refuses to
// run as root runs as its package's user, in a node dir made reachable for that user, from a data
// dir an init command made once.

// runAs returns the credential to run a root-refusing server as name: nil when the harness is not
// root (the server runs as the harness's user).
func runAs(name string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("no user %s to run the server as (root is refused): %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: false, Groups: []uint32{}}, nil
}

// userRequirements: when the harness runs as root, the user name a server runs as, which pkg's
// package makes; nothing otherwise.
func userRequirements(name, pkg string) []Requirement {
	if os.Geteuid() != 0 {
		return nil
	}
	r := Requirement{Name: "user " + name, Fix: "install " + pkg + " (its package makes the user), or run make deps"}
	if _, err := runAs(name); err != nil {
		r.Detail = err.Error()
	} else {
		r.OK, r.Detail = true, "servers that refuse root run as "+name
	}
	return []Requirement{r}
}

// ownDir gives dir to cred's user and lets that user reach it: each ancestor without search
// permission for others gets it (search only, not read: the run dir's names stay private).
func ownDir(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		return err
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				return err
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// runOnce runs a server's init command (initdb, mariadb-install-db) in dir as cred's user, after
// giving it dir; it dies with the harness, and gets 30 s.
func runOnce(dir string, cred *syscall.Credential, argv ...string) error {
	if err := ownDir(dir, cred); err != nil {
		return fmt.Errorf("prepare %s for the server's user: %w", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(argv[0]), err, errorLines(string(out), 5))
	}
	return nil
}

// errorLines returns the lines of out that say ERROR (mariadb-install-db's come before pages of
// advice), else its last n lines.
func errorLines(out string, n int) string {
	var errs []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "ERROR") {
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) == 0 {
		return lastLines(out, n)
	}
	return lastLines(strings.Join(errs, "\n"), n)
}

// oneServer is the nodes check of a topology of one server: --nodes 1 or none.
func oneServer(topology string) func(n int) (int, error) {
	return func(n int) (int, error) {
		if n > 1 {
			return n, fmt.Errorf("%s with %d nodes (it has one server; use --nodes 1)", topology, n)
		}
		return 1, nil
	}
}

// serverOf names a topology's one server of kind: the node that holds every lock (Master,
// Leader, and the faults' "master" selector).
func serverOf(kind Kind) func(c *topo, _ context.Context) (string, error) {
	return func(c *topo, _ context.Context) (string, error) {
		for _, n := range c.data {
			if n.Kind == kind {
				return n.Name, nil
			}
		}
		return "", fmt.Errorf("no %s node", kind)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
