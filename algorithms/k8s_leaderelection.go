package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

const topoKubernetes = "kubernetes"

// KubeAccess is how a client reaches a kubernetes topology's apiserver besides its address
// (Config.Addrs[0], its proxy): the cluster gives it (cluster.Endpoints.Kube, whose fields these
// are), a process client gets it in init (kube_token, kube_ca). With them a user builds the
// client-go rest.Config of their own elector: Host "https://"+Addrs[0], BearerToken Token,
// TLSClientConfig.CAData CA.
type KubeAccess struct {
	// Token is the bearer token (a member of system:masters; the apiserver allows it everything).
	Token string `json:"kube_token,omitempty"`
	// CA is the PEM of the apiserver's (self-signed) serving certificate.
	CA string `json:"kube_ca,omitempty"`
}

// KubeRESTConfig is the client-go rest.Config of cfg's client: its proxy to the apiserver, the
// token and the CA (cfg.Kube), requests bounded by timeout (0: none).
func KubeRESTConfig(cfg Config, timeout time.Duration) (*rest.Config, error) {
	if len(cfg.Addrs) == 0 || cfg.Kube == nil {
		return nil, errors.New("no apiserver: Config.Addrs[0] and Config.Kube are set on the kubernetes topology")
	}
	return &rest.Config{
		Host:            "https://" + cfg.Addrs[0],
		BearerToken:     cfg.Kube.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(cfg.Kube.CA)},
		Timeout:         timeout,
		QPS:             -1, // no client-side rate limit: the elector's requests are few
	}, nil
}

// KubeElection is the timing of client-go's elector for a lease of ttl: LeaseDuration is ttl
// rounded up to whole seconds (the Lease object records whole seconds, and since kubernetes
// #114872 the candidates wait the duration recorded there: 1.5 s would be recorded as 1 s),
// RenewDeadline 3/4 of it and RetryPeriod 3/20 — the ratios of client-go's defaults (15 s,
// 10 s, 2 s) tightened so the leader gives up 200 ms before a 2 s lease can be taken over
// (2 s / 1.5 s / 0.3 s at the kubernetes scenarios' TTL of 2 s).
func KubeElection(ttl time.Duration) (lease, renew, retry time.Duration) {
	lease = time.Duration(max(math.Ceil(ttl.Seconds()), 1)) * time.Second
	return lease, lease * 3 / 4, lease * 3 / 20
}

// k8sElector is client-go's leader election as every controller with replicas uses it
// (k8s.io/client-go/tools/leaderelection v0.37.2): a LeaderElector on a LeaseLock
// (coordination.k8s.io/v1 Lease "<name>" in namespace default). Acquire starts an elector with
// an identity of its own (client-<n>-<acquire>, as a new replica's pod name) and returns when it
// starts leading (OnStartedLeading); the critical section runs while it leads. Release cancels
// the elector's context: the elector stops renewing (with ReleaseOnCancel it first writes the
// Lease free, so the next candidate need not wait out the lease).
//
// Validity is 0 (until released): the elector renews in the background and tells its leader it
// stopped leading by cancelling the context it gave OnStartedLeading and calling
// OnStoppedLeading. Valid asks that context and IsLeader(), as a careful controller does before
// each write. IsLeader alone is not enough: it compares the last record the elector observed
// with its identity, and a leader whose renewals failed until RenewDeadline observes nothing new
// — it stays true after the elector gave up (the #23731 mutant trusts it).
//
// How it fails (its package doc: no fencing, "tolerant to arbitrary clock skew, but not
// tolerant to arbitrary clock skew rate"): a leader that stops (a GC pause) longer than the lease
// cannot act on what it has not yet noticed, and writes late after another candidate took over.
// Its clock is client-go's own (an unexported clock.RealClock): Config.Clock does not reach it.
type k8sElector struct {
	cfg              Config
	leases           coordinationv1.LeasesGetter
	name             string
	lease, renew, rt time.Duration
	releaseOnCancel  bool
	ignoreStopped    bool // the #23731 mutant: OnStoppedLeading and the leading context ignored
	ownDuration      bool // the #47671 mutant: the lease counted by the candidate's own LeaseDuration
	seq              atomic.Int64
}

// k8sTerm is one elector, from Acquire to Release: the Lease.Data of k8s-leaderelection.
type k8sTerm struct {
	le      *leaderelection.LeaderElector
	cancel  context.CancelFunc
	done    chan struct{}   // Run returned
	leading context.Context // given by OnStartedLeading; done when the elector stopped leading
	stopped atomic.Bool     // OnStoppedLeading was called
}

func newK8sElector(releaseOnCancel, ignoreStopped bool) func(Config) (Locker, error) {
	return newK8sElectorTTL(releaseOnCancel, ignoreStopped, func(cfg Config) time.Duration { return cfg.TTL })
}

// newK8sElectorTTL is newK8sElector with the elector's timing sized from ttl(cfg).
func newK8sElectorTTL(releaseOnCancel, ignoreStopped bool, ttl func(Config) time.Duration) func(Config) (Locker, error) {
	return func(cfg Config) (Locker, error) {
		cfg = cfg.withDefaults()
		l := &k8sElector{cfg: cfg, name: kubeName(cfg.Name), releaseOnCancel: releaseOnCancel, ignoreStopped: ignoreStopped}
		l.lease, l.renew, l.rt = KubeElection(ttl(cfg))
		// Each request is bounded by half the renew deadline, so a request black-holed by a
		// partition fails in time for another try before the deadline.
		rc, err := KubeRESTConfig(cfg, l.renew/2)
		if err != nil {
			return nil, fmt.Errorf("k8s-leaderelection: %w", err)
		}
		cl, err := coordinationv1.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("k8s-leaderelection: %w", err)
		}
		l.leases = cl
		return l, nil
	}
}

// kubeName turns a lock name into a Lease name (a DNS subdomain: lower case, digits, '-', '.').
func kubeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, s)
	return strings.Trim(s, "-.")
}

// markedLock is the LeaseLock with the harness's attempt hook before each write that may make its
// candidate the holder (Create, Update), while it is still acquiring.
type markedLock struct {
	rl.Interface
	mu     sync.Mutex
	ctx    context.Context // the Acquire's, until it returns
	doubts bool            // a write sent while acquiring has an unknown outcome
	// own, when set, replaces the LeaseDurationSeconds of every record read with the candidate's
	// own LeaseDuration: client-go's counting before kubernetes #114872 (the #47671 mutant).
	own time.Duration
}

// Get reads the record (see own).
func (m *markedLock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	r, raw, err := m.Interface.Get(ctx)
	if err == nil && r != nil && m.own > 0 {
		r.LeaseDurationSeconds = int(m.own / time.Second)
	}
	return r, raw, err
}

// write runs a Create or Update, marked as an attempt while acquiring. A write the apiserver
// refused (a conflict: another candidate wrote first) took no effect; one that failed otherwise
// (a timeout, a lost connection) may have.
func (m *markedLock) write(do func() error) error {
	m.mu.Lock()
	acquiring := m.ctx != nil
	if acquiring {
		MarkAttempt(m.ctx)
	}
	m.mu.Unlock()
	err := do()
	if acquiring && err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
		m.mu.Lock()
		m.doubts = true
		m.mu.Unlock()
	}
	return err
}

func (m *markedLock) Create(ctx context.Context, r rl.LeaderElectionRecord) error {
	return m.write(func() error { return m.Interface.Create(ctx, r) })
}

func (m *markedLock) Update(ctx context.Context, r rl.LeaderElectionRecord) error {
	return m.write(func() error { return m.Interface.Update(ctx, r) })
}

// acquired ends the acquisition: later writes are renewals. It reports whether a write sent
// meanwhile may have taken effect unseen.
func (m *markedLock) acquired() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ctx = nil
	return m.doubts
}

// Acquire runs a new elector until it starts leading, or ctx ends.
func (l *k8sElector) Acquire(ctx context.Context) (Lease, error) {
	id := fmt.Sprintf("client-%d-%d", l.cfg.Client, l.seq.Add(1))
	lock := &markedLock{ctx: ctx, own: map[bool]time.Duration{true: l.lease}[l.ownDuration], Interface: &rl.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: l.name, Namespace: "default"},
		Client:     l.leases,
		LockConfig: rl.ResourceLockConfig{Identity: id},
	}}
	t := &k8sTerm{done: make(chan struct{})}
	started := make(chan context.Context, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: l.name,
		LeaseDuration: l.lease, RenewDeadline: l.renew, RetryPeriod: l.rt,
		ReleaseOnCancel: l.releaseOnCancel,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { started <- ctx },
			OnStoppedLeading: func() { t.stopped.Store(true) },
		},
	})
	if err != nil {
		return Lease{}, fmt.Errorf("k8s-leaderelection: %w", err)
	}
	t.le = le
	// The elector logs through the context's logger: not into the harness's output.
	run, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	t.cancel = cancel
	go func() {
		defer close(t.done)
		le.Run(run)
	}()
	select {
	case t.leading = <-started:
		lock.acquired()
		return Lease{TTL: l.lease, Data: t}, nil
	case <-ctx.Done():
	case <-t.done: // Run returned without leading: its context was not cancelled, so never
	}
	doubts := lock.acquired()
	l.stop(t)
	select {
	case lc := <-started: // it started leading as it was cancelled: its lease stands on the server
		t.leading = lc
		return Lease{}, &UnknownError{Op: "k8s-leaderelection acquire (led as it was cancelled)", Err: ctx.Err()}
	default:
	}
	if doubts {
		return Lease{}, &UnknownError{Op: "k8s-leaderelection acquire", Err: ctx.Err()}
	}
	return Lease{}, fmt.Errorf("k8s-leaderelection acquire: %w", ctx.Err())
}

// stop cancels the elector and waits for Run to return: at once, or after the release's write
// (ReleaseOnCancel, bounded by RenewDeadline).
func (l *k8sElector) stop(t *k8sTerm) {
	t.cancel()
	select {
	case <-t.done:
	case <-time.After(l.renew + l.cfg.OpTimeout):
	}
}

// Valid: the elector still leads — the context it gave OnStartedLeading is live, it has not
// called OnStoppedLeading, and IsLeader() — or, for the mutant, IsLeader() alone.
func (l *k8sElector) Valid(lease Lease) bool {
	t, ok := lease.Data.(*k8sTerm)
	if !ok {
		return false
	}
	if l.ignoreStopped {
		return t.le.IsLeader()
	}
	return t.leading.Err() == nil && !t.stopped.Load() && t.le.IsLeader()
}

// Release cancels the elector's context. ErrNotHeld when it had stopped leading before.
func (l *k8sElector) Release(ctx context.Context, lease Lease) error {
	t, ok := lease.Data.(*k8sTerm)
	if !ok {
		return fmt.Errorf("k8s-leaderelection release: lease has no elector (Data %T)", lease.Data)
	}
	if err := l.cfg.Point(ctx, "release:before-cancel"); err != nil {
		return stopped("release:before-cancel", err)
	}
	lost := t.leading.Err() != nil
	l.stop(t)
	if lost {
		return ErrNotHeld
	}
	return nil
}

func init() {
	Register(Info{
		Name:        "k8s-leaderelection",
		Unreached:   k8sClockUnreached,
		ReferenceOn: []string{topoKubernetes},
		Summary: "client-go's LeaderElector on a Lease (LeaseDuration ceil(TTL) s, RenewDeadline 3/4, RetryPeriod 3/20); " +
			"the critical section runs while it leads; release cancels the elector.",
		Source:     "k8s.io/client-go v0.37.2 tools/leaderelection, resourcelock.LeaseLock",
		Topologies: []string{topoKubernetes},
		Points:     []string{"release:before-cancel"},
		New:        newK8sElector(false, false),
	})
	Register(Info{
		Name:      "k8s-leaderelection-release",
		Unreached: k8sClockUnreached,
		Summary: "k8s-leaderelection with ReleaseOnCancel: the cancelled leader writes the Lease free, so the next " +
			"candidate takes it at its next retry instead of after the lease.",
		Source:     "k8s.io/client-go v0.37.2 LeaderElectionConfig.ReleaseOnCancel",
		Topologies: []string{topoKubernetes},
		Points:     []string{"release:before-cancel"},
		New:        newK8sElector(true, false),
	})
	// kubernetes #47671: candidates configured with different LeaseDurations. Before #114872
	// (client-go v0.27) a candidate counted the lease by its own LeaseDuration, so one with a
	// shorter one took the Lease over from a leader still within its own; since, it counts the
	// duration the holder recorded in the Lease (LeaseDurationSeconds). Client 1 runs with half
	// the others' lease (1 s where they have 2 s: RenewDeadline 0.75 s, RetryPeriod 0.15 s).
	Register(Info{
		Name:      "k8s-leaderelection-short-lease",
		Unreached: k8sClockUnreached,
		Summary: "k8s-leaderelection where client 1's LeaseDuration is half the others' (kubernetes #47671; " +
			"client-go since #114872 waits the duration the holder recorded).",
		Source:     "k8s.io/client-go v0.37.2; kubernetes #47671, #114872",
		Topologies: []string{topoKubernetes},
		Points:     []string{"release:before-cancel"},
		New:        newK8sShortLease(false),
	})
}

// newK8sShortLease is k8s-leaderelection-short-lease; with own, every candidate counts the lease by
// its own LeaseDuration, as client-go did before #114872.
func newK8sShortLease(own bool) func(Config) (Locker, error) {
	build := newK8sElectorTTL(false, false, func(cfg Config) time.Duration {
		if cfg.Client == 1 {
			return cfg.TTL / 2
		}
		return cfg.TTL
	})
	return func(cfg Config) (Locker, error) {
		l, err := build(cfg)
		if err == nil {
			l.(*k8sElector).ownDuration = own
		}
		return l, err
	}
}

// k8sClockUnreached says which faults cannot reach client-go's elector: it keeps its clock in an
// unexported field (clock.RealClock), and a Go binary reads the vDSO, which libfaketime does not
// move — the skew rate client-go's doc says it does not tolerate is out of the harness's reach.
var k8sClockUnreached = map[string]string{
	"clock-skew": "client-go's elector keeps its clock in an unexported field (clock.RealClock), and Go binaries ignore libfaketime",
	"clock-rate": "client-go's elector keeps its clock in an unexported field (clock.RealClock), and Go binaries ignore libfaketime",
}
