package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultCommandTimeout bounds each kill, restart, pause and resume command of a cluster file.
const DefaultCommandTimeout = 60 * time.Second

// ExternalFile is a cluster file (--cluster FILE): the servers of a cluster someone else runs, and
// how lockchaos may fault them. See docs/external.md.
//
//	command_timeout: 30s            # optional, bounds each command (default 60s)
//	master_name: mymaster           # redis-sentinel: the name the sentinels know the master by
//	nodes:
//	  - name: redis-1
//	    kind: redis                 # redis, sentinel, zookeeper or etcd
//	    address: 10.0.0.5:6379      # where the server listens
//	    toxiproxy: 10.0.0.5:8474    # toxiproxy-server API next to it: network faults
//	    kill: ssh db1 sudo systemctl kill -s KILL redis-server      # optional, run with sh -c
//	    restart: ssh db1 sudo systemctl restart redis-server
//	    pause: ssh db1 sudo systemctl kill -s STOP redis-server
//	    resume: ssh db1 sudo systemctl kill -s CONT redis-server
//	  - name: pg-1                  # a SQL server (postgres or mariadb, one per file) also says
//	    kind: postgres              # how the clients log in:
//	    address: 10.0.0.6:5432
//	    user: lockchaos             # postgres: default postgres; mariadb: required
//	    password_env: LOCKCHAOS_PG_PASSWORD   # or password: ..., in the file
//	    database: lockchaos         # postgres: default the user's name
//	    sslmode: require            # postgres: default disable
type ExternalFile struct {
	// Path is where the file was read from.
	Path string `yaml:"-"`
	// CommandTimeout bounds each command (default DefaultCommandTimeout).
	CommandTimeout string `yaml:"command_timeout,omitempty"`
	// MasterName is the name the sentinels monitor the master under (redis-sentinel; default
	// mymaster, as in Redis's sentinel.conf).
	MasterName string         `yaml:"master_name,omitempty"`
	Nodes      []ExternalNode `yaml:"nodes"`

	timeout time.Duration
	lines   []int // each node's line in the file
}

// ExternalNode is one server of a cluster file.
type ExternalNode struct {
	Name    string `yaml:"name"`
	Kind    Kind   `yaml:"kind"`
	Address string `yaml:"address"`
	// Toxiproxy is the address (host:port) of the toxiproxy-server API lockchaos creates this
	// node's proxies on; without it the node's links cannot be faulted.
	Toxiproxy string `yaml:"toxiproxy,omitempty"`
	// Kill, Restart, Pause and Resume are shell commands (sh -c) that act on the server.
	Kill    string `yaml:"kill,omitempty"`
	Restart string `yaml:"restart,omitempty"`
	Pause   string `yaml:"pause,omitempty"`
	Resume  string `yaml:"resume,omitempty"`
	// User, Password (or PasswordEnv, the variable that holds it), Database and SSLMode are how
	// the clients and the harness log in to a SQL server (postgres, mariadb).
	User        string `yaml:"user,omitempty"`
	Password    string `yaml:"password,omitempty"`
	PasswordEnv string `yaml:"password_env,omitempty"`
	Database    string `yaml:"database,omitempty"`
	SSLMode     string `yaml:"sslmode,omitempty"`
}

// Login is how the clients and the harness log in to the node (a SQL server), its defaults
// filled in when the file was parsed.
func (n ExternalNode) Login() SQLLogin {
	return SQLLogin{User: n.User, Password: n.Password, Database: n.Database, SSLMode: n.SSLMode}
}

// LoadExternal reads and checks a cluster file. Every error wraps ErrBadSpec and is one line
// naming the file, the line where known, and the fix.
func LoadExternal(path string) (*ExternalFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: cluster file: %w (give --cluster the path of a YAML cluster file, see docs/external.md)", ErrBadSpec, err)
	}
	f, err := ParseExternal(b)
	if err != nil {
		return nil, fmt.Errorf("%w: cluster file %s: %w", ErrBadSpec, path, err)
	}
	f.Path = path
	return f, nil
}

// ParseExternal decodes and checks a cluster file's contents.
func ParseExternal(b []byte) (*ExternalFile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f ExternalFile
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file (want `nodes:` with a list of servers)")
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s (node fields: name, kind, address, toxiproxy, kill, restart, pause, resume; SQL servers: user, password, password_env, database, sslmode)", strings.Join(te.Errors, "; "))
		}
		return nil, err
	}
	var root yaml.Node
	_ = yaml.Unmarshal(b, &root)
	f.lines = nodeLines(&root)
	if err := f.check(); err != nil {
		return nil, err
	}
	return &f, nil
}

// nodeLines finds the line of each item of `nodes:`.
func nodeLines(root *yaml.Node) []int {
	if len(root.Content) == 0 {
		return nil
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "nodes" {
			var out []int
			for _, item := range m.Content[i+1].Content {
				out = append(out, item.Line)
			}
			return out
		}
	}
	return nil
}

// where names node i for an error: "line 4: node redis-1".
func (f *ExternalFile) where(i int) string {
	name := f.Nodes[i].Name
	if name == "" {
		name = fmt.Sprintf("#%d", i+1)
	}
	if i < len(f.lines) {
		return fmt.Sprintf("line %d: node %s", f.lines[i], name)
	}
	return "node " + name
}

func (f *ExternalFile) check() error {
	f.timeout = DefaultCommandTimeout
	if f.CommandTimeout != "" {
		d, err := time.ParseDuration(f.CommandTimeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("command_timeout %q: write a positive duration like 30s", f.CommandTimeout)
		}
		f.timeout = d
	}
	if len(f.Nodes) == 0 {
		return errors.New("no nodes (want `nodes:` with a list of servers, each with name, kind and address)")
	}
	if f.MasterName == "" {
		f.MasterName = "mymaster"
	}
	seen := map[string]bool{}
	for i := range f.Nodes {
		n := &f.Nodes[i]
		w := f.where(i)
		switch {
		case n.Name == "":
			return fmt.Errorf("%s: no name (add name: redis-1)", w)
		case strings.ContainsAny(n.Name, " /\t"):
			return fmt.Errorf("%s: name %q has a space or slash (use letters, digits and dashes)", w, n.Name)
		case seen[n.Name]:
			return fmt.Errorf("%s: name used twice (give every node its own name)", w)
		}
		seen[n.Name] = true
		k, ok := kinds[n.Kind]
		switch {
		case !ok || k.ping == nil:
			return fmt.Errorf("%s: unknown kind %q (use %s)", w, n.Kind, listed(kindsWhere(func(k kind) bool { return k.ping != nil }), "or"))
		case k.login != nil:
			if err := n.checkLogin(k.login); err != nil {
				return fmt.Errorf("%s: %w", w, err)
			}
		case n.User != "" || n.Password != "" || n.PasswordEnv != "" || n.Database != "" || n.SSLMode != "":
			return fmt.Errorf("%s: user, password, password_env, database and sslmode are for %s nodes (remove them)", w, listed(kindsWhere(func(k kind) bool { return k.login != nil }), "and"))
		}
		if err := checkHostPort(n.Address); err != nil {
			return fmt.Errorf("%s: address %q: %v (write host:port, e.g. 10.0.0.5:6379)", w, n.Address, err)
		}
		if n.Toxiproxy != "" {
			if err := checkHostPort(n.Toxiproxy); err != nil {
				return fmt.Errorf("%s: toxiproxy %q: %v (write the API's host:port, e.g. 10.0.0.5:8474)", w, n.Toxiproxy, err)
			}
		}
		if (n.Pause == "") != (n.Resume == "") {
			return fmt.Errorf("%s: pause and resume go together (add the missing one)", w)
		}
	}
	_, err := f.Topology()
	return err
}

// checkLogin reads a SQL node's password from password_env, then checks the rest of its login
// and fills its defaults the kind's way (login).
func (n *ExternalNode) checkLogin(login func(n *ExternalNode) error) error {
	switch {
	case n.Password != "" && n.PasswordEnv != "":
		return errors.New("password and password_env both set (keep one)")
	case n.PasswordEnv != "":
		p, ok := os.LookupEnv(n.PasswordEnv)
		if !ok {
			return fmt.Errorf("password_env %s is not set (export %s=..., or give password:)", n.PasswordEnv, n.PasswordEnv)
		}
		n.Password = p
	}
	return login(n)
}

func checkHostPort(s string) error {
	if s == "" {
		return errors.New("missing")
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host == "" || port == "" || port == "0" {
		return errors.New("needs a host and a port")
	}
	return nil
}

// Topology infers the topology from the nodes' kinds, each kind its own way (kind.external): one
// redis node is redis-single, several are redis-multi (independent masters, Redlock), redis nodes
// with sentinels are redis-sentinel (the master and its replicas, found through the sentinels);
// ZooKeeper and etcd need an odd number of members; a SQL server is listed alone.
func (f *ExternalFile) Topology() (string, error) {
	count := map[Kind]int{}
	for _, n := range f.Nodes {
		count[n.Kind]++
	}
	var ks []Kind
	for k := range count {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var main Kind // the kind whose nodes make the topology
	switch {
	case len(ks) == 1 && kinds[ks[0]].beside != "":
		return "", fmt.Errorf("only %s nodes (list the %s nodes they come with too)", ks[0], kinds[ks[0]].beside)
	case len(ks) == 1:
		main = ks[0]
	case len(ks) == 2 && kinds[ks[0]].beside == ks[1]:
		main = ks[0]
	case len(ks) == 2 && kinds[ks[1]].beside == ks[0]:
		main = ks[1]
	default:
		return "", fmt.Errorf("the nodes mix kinds %v (one cluster file holds one cluster)", ks)
	}
	return kinds[main].external(count[main])
}

// Node returns the named node.
func (f *ExternalFile) Node(name string) (ExternalNode, bool) {
	for _, n := range f.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return ExternalNode{}, false
}

// Timeout is the bound of each command.
func (f *ExternalFile) Timeout() time.Duration {
	if f.timeout == 0 {
		return DefaultCommandTimeout
	}
	return f.timeout
}
