package cluster

import (
	"os"
	"os/exec"
)

// checkCommand checks a command a topology's servers need (its needs and doctor, topology.go).
// Where the local backend finds each server is set in its topology's file, in variables so a test
// or a packager can point elsewhere.
func checkCommand(bin, pkg string) Requirement {
	r := Requirement{Name: bin, Fix: "install it: apt-get install " + pkg + ", or run make deps"}
	path, err := exec.LookPath(bin)
	if err != nil {
		r.Detail = bin + " not found in PATH"
		return r
	}
	r.OK, r.Detail = true, path
	return r
}

func checkFile(path, pkg string) Requirement {
	r := Requirement{Name: path, Fix: "install it: apt-get install " + pkg + ", or run make deps"}
	if _, err := os.Stat(path); err != nil {
		r.Detail = path + " not found"
		return r
	}
	r.OK, r.Detail = true, path
	return r
}
