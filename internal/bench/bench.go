// Package bench holds what lockchaos's benchmarks share: the reference load generator
// (redis-benchmark), medians, the machine's load, the process's peak memory, and the path of
// BENCHMARKS.md. It is imported by _test files only.
package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoRedisBenchmark means redis-benchmark is not installed (Debian package redis-tools).
var ErrNoRedisBenchmark = errors.New("bench: redis-benchmark not found (apt-get install redis-tools)")

// File returns the path of BENCHMARKS.md at the module root, found from the working directory
// (go test runs a package's benchmarks in the package's directory).
func File() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "BENCHMARKS.md"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("bench: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Median returns the median of xs (the mean of the middle two for an even count), 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MedianDuration is Median for durations.
func MedianDuration(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(Median(xs))
}

// LoadAvg returns /proc/loadavg's 1, 5 and 15 minute figures as "1.23 0.98 0.50", or "?" where
// there is none: on a shared 2-core machine a number means little without it.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Load1 returns the 1-minute load average (0 if unknown).
func Load1() float64 {
	f := strings.Fields(LoadAvg())
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// Repeats is how many times a benchmark repeats each measurement for its medians: env
// BENCH_REPEATS, else def.
func Repeats(def int) int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_REPEATS")); err == nil && n > 0 {
		return n
	}
	return def
}

// EnvDuration reads a duration from env name ("10m"), else def.
func EnvDuration(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration like 2m or 10m", name, v)
	}
	return d, nil
}

// RedisBenchmark is one redis-benchmark load: Clients connections sending Command (a -t test
// name such as "set") to Addr, no pipelining, as the harness sends its commands one at a time.
type RedisBenchmark struct {
	Addr     string
	Clients  int
	Requests int
	Test     string // -t, default "set"
}

var rpsRE = regexp.MustCompile(`(?m)^([A-Z_]+)[^:]*: ([0-9.]+) requests per second`)

// Run runs redis-benchmark -q and returns its requests per second.
func (r RedisBenchmark) Run(ctx context.Context) (float64, error) {
	path, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return 0, ErrNoRedisBenchmark
	}
	host, port, ok := strings.Cut(r.Addr, ":")
	if !ok {
		return 0, fmt.Errorf("bench: address %q has no port", r.Addr)
	}
	test := r.Test
	if test == "" {
		test = "set"
	}
	cmd := exec.CommandContext(ctx, path, "-h", host, "-p", port, "-c", strconv.Itoa(r.Clients),
		"-n", strconv.Itoa(r.Requests), "-t", test, "-q")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("redis-benchmark: %w: %s", err, strings.TrimSpace(out.String()))
	}
	// -q prints progress lines ending in \r before the result line.
	text := strings.ReplaceAll(out.String(), "\r", "\n")
	m := rpsRE.FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("redis-benchmark: no rate in %q", strings.TrimSpace(text))
	}
	return strconv.ParseFloat(m[len(m)-1][2], 64)
}

// RedisBenchmarkAll runs one redis-benchmark per address at the same time (the Redlock path:
// every client talks to every node at once) for about d, and returns the summed rate and the
// requests sent in all (calibration included). A short calibration run sizes -n so each load
// lasts about d.
func RedisBenchmarkAll(ctx context.Context, addrs []string, clients int, d time.Duration) (rate float64, requests int, err error) {
	run := func(n int) (float64, error) {
		rates := make([]float64, len(addrs))
		errs := make([]error, len(addrs))
		var wg sync.WaitGroup
		for i, a := range addrs {
			wg.Go(func() {
				rates[i], errs[i] = RedisBenchmark{Addr: a, Clients: clients, Requests: n}.Run(ctx)
			})
		}
		wg.Wait()
		sum := 0.0
		for _, r := range rates {
			sum += r
		}
		return sum, errors.Join(errs...)
	}
	n0 := max(2000, 200*clients)
	probe, err := run(n0)
	if err != nil {
		return 0, 0, err
	}
	n := max(int(probe/float64(len(addrs))*d.Seconds()), 1000)
	rate, err = run(n)
	return rate, (n0 + n) * len(addrs), err
}

// CPU returns the CPU time (user + system) used so far by this process and by its waited-for
// children, from getrusage(2).
func CPU() (self, children time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return self, children
}

// PeakRSS returns the process's peak resident set (VmHWM) in bytes, from /proc/self/status.
func PeakRSS() (uint64, error) {
	return procStatus("VmHWM")
}

// RSS returns the process's resident set (VmRSS) in bytes.
func RSS() (uint64, error) {
	return procStatus("VmRSS")
}

func procStatus(field string) (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == field {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseUint(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("bench: no %s in /proc/self/status", field)
}
