package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
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
		switch n.Kind {
		case KindRedis, KindSentinel, KindZooKeeper, KindEtcd:
			if n.User != "" || n.Password != "" || n.PasswordEnv != "" || n.Database != "" || n.SSLMode != "" {
				return fmt.Errorf("%s: user, password, password_env, database and sslmode are for postgres and mariadb nodes (remove them)", w)
			}
		case KindPostgres, KindMariaDB:
			if err := n.checkLogin(); err != nil {
				return fmt.Errorf("%s: %w", w, err)
			}
		default:
			return fmt.Errorf("%s: unknown kind %q (use redis, sentinel, zookeeper, etcd, postgres or mariadb)", w, n.Kind)
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

// checkLogin checks a SQL node's login and fills its defaults: PostgreSQL's user postgres, its
// database the user's name (as libpq's), sslmode disable; the password from password_env.
func (n *ExternalNode) checkLogin() error {
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
	if n.Kind == KindMariaDB {
		switch {
		case n.User == "":
			return errors.New("no user (add user: the account the clients log in as; GET_LOCK needs no privilege)")
		case n.SSLMode != "":
			return errors.New("sslmode is PostgreSQL's (remove it)")
		}
		return nil
	}
	if n.User == "" {
		n.User = PostgresUser
	}
	if n.Database == "" {
		n.Database = n.User
	}
	switch n.SSLMode {
	case "":
		n.SSLMode = "disable"
	case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
	default:
		return fmt.Errorf("sslmode %q (use disable, allow, prefer, require, verify-ca or verify-full)", n.SSLMode)
	}
	return nil
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

// Topology infers the topology from the nodes' kinds: one redis node is redis-single, several are
// redis-multi (independent masters, Redlock), redis nodes with sentinels are redis-sentinel (the
// master and its replicas, found through the sentinels); ZooKeeper and etcd need an odd number of
// members.
func (f *ExternalFile) Topology() (string, error) {
	count := map[Kind]int{}
	for _, n := range f.Nodes {
		count[n.Kind]++
	}
	if count[KindSentinel] > 0 && count[KindRedis] > 0 && len(count) == 2 {
		return RedisSentinel, nil
	}
	if count[KindSentinel] > 0 && len(count) == 1 {
		return "", errors.New("only sentinels (list the master and its replicas too, as kind redis)")
	}
	if len(count) > 1 {
		return "", fmt.Errorf("the nodes mix kinds %v (one cluster file holds one cluster: redis masters, redis with sentinels, ZooKeeper members, etcd members, or one SQL server)", kindList(count))
	}
	n := len(f.Nodes)
	switch k := f.Nodes[0].Kind; k {
	case KindPostgres, KindMariaDB:
		if n > 1 {
			return "", fmt.Errorf("%d %s nodes (list the one server the clients use; a standby or a pooler in front runs on the local backend only)", n, k)
		}
		if k == KindMariaDB {
			return MariaDB, nil
		}
		return Postgres, nil
	case KindRedis:
		if n == 1 {
			return RedisSingle, nil
		}
		return RedisMulti, nil
	case KindZooKeeper:
		if n%2 == 0 {
			return "", fmt.Errorf("%d zookeeper nodes (list every member of the ensemble: 1, 3 or 5)", n)
		}
		return ZooKeeper, nil
	default:
		if n%2 == 0 {
			return "", fmt.Errorf("%d etcd nodes (list every member of the cluster: 1, 3 or 5)", n)
		}
		return Etcd, nil
	}
}

func kindList(count map[Kind]int) []string {
	var out []string
	for _, k := range []Kind{KindRedis, KindZooKeeper, KindEtcd, KindSentinel, KindPostgres, KindMariaDB} {
		if count[k] > 0 {
			out = append(out, string(k))
		}
	}
	return out
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
