package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// argv writes the config of m's server into its dir and returns its command line: the node's own
// (server.argv), else its kind's (kind.argv).
func (b *local) argv(m *process, restart bool) ([]string, error) {
	n := m.n
	if n.srv.argv != nil {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return nil, err
		}
		return n.srv.argv(m.dir), nil
	}
	if argv := kinds[n.Kind].argv; argv != nil {
		return argv(m, restart)
	}
	return nil, fmt.Errorf("the local backend cannot run a %s node", n.Kind)
}

// writeConfig writes lines to a config file in dir and returns its path.
func writeConfig(dir, file string, lines []string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, file)
	return path, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
