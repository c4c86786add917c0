package main

import (
	"strings"

	"github.com/lockchaos/lockchaos/internal/procclient"
)

// prepareProcessClients registers the process clients a command line names: the shipped
// manifests under the repository's clients/, every --algorithm or --algorithms value that is a
// .yaml manifest (replaced by the client's name), and run's --client-cmd CMD --topology T
// (replaced by --algorithm client-cmd; without --client-cmd, --topology is passed on). For list, the manifests are registered and the flag
// dropped. It returns the rewritten arguments.
func prepareProcessClients(args []string) ([]string, error) {
	if d := procclient.ShippedDir(); d != "" {
		if err := procclient.RegisterDir(d); err != nil {
			return nil, usagef("%v", err)
		}
	}
	var out []string
	var clientCmd, topology string
	var haveCmd bool
	for i := 0; i < len(args); i++ {
		name, value, inline := flagArg(args[i])
		if name == "" || (!inline && i+1 >= len(args)) {
			out = append(out, args[i])
			continue
		}
		if !inline {
			value = args[i+1]
		}
		switch name {
		case "algorithm", "algorithms":
			vals := strings.Split(value, ",")
			for j, v := range vals {
				if isManifest(v) {
					n, err := procclient.RegisterFile(strings.TrimSpace(v))
					if err != nil {
						return nil, usagef("%v", err)
					}
					vals[j] = n
				}
			}
			if args[0] != "list" { // list shows every registered algorithm: the flag only registers
				out = append(out, "--"+name, strings.Join(vals, ","))
			}
		case "client-cmd":
			clientCmd, haveCmd = value, true
		case "topology":
			topology = value
		default:
			out = append(out, args[i])
			continue
		}
		if !inline {
			i++
		}
	}
	if topology != "" && !haveCmd {
		// run and matrix: the topology to run the algorithms on (scenarios.CellOn).
		out = append(out, "--topology", topology)
	}
	if haveCmd {
		n, err := procclient.RegisterCommand(clientCmd, topology)
		if err != nil {
			return nil, usagef("%v", err)
		}
		out = append(out, "--algorithm", n)
	}
	return out, nil
}

// flagArg splits "--name=value" / "-name" into the flag's name and inline value.
func flagArg(a string) (name, value string, inline bool) {
	if !strings.HasPrefix(a, "-") {
		return "", "", false
	}
	a = strings.TrimLeft(a, "-")
	name, value, inline = strings.Cut(a, "=")
	return name, value, inline
}

func isManifest(v string) bool {
	v = strings.TrimSpace(v)
	return strings.HasSuffix(v, ".yaml") || strings.HasSuffix(v, ".yml")
}
