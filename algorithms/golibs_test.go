package algorithms_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-zookeeper/zk"
	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

// The Go lock libraries of issue #28, each as its README uses it, against real servers.

func TestBsmRedislock(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 3, Proxies: true})
	ctx := context.Background()
	const ttl = 2 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "bsm-redislock", 1, "handover", opts{ttl: ttl})
		b := newLocker(t, c, "bsm-redislock", 2, "handover", opts{ttl: ttl})
		libHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.Validity != ttl || l.TTL != ttl || l.Fence != 0 {
				t.Errorf("lease %+v, want Validity = TTL = %v from the call, no fence", l, ttl)
			}
			if d := pttl(t, direct(t, c, 0), "handover"); d <= 0 || d > ttl {
				t.Errorf("PTTL %v, want in (0, %v]", d, ttl)
			}
			if !a.(algorithms.Validator).Valid(l) {
				t.Error("Valid (lock.TTL > 0) false for a fresh lock")
			}
		})
	})

	// What lock.TTL says once the key is gone: 0 and no error (the README's "Now, my lock has
	// expired!"), so the careful holder's Valid turns false; Release is ErrLockNotHeld.
	t.Run("expired", func(t *testing.T) {
		a := newLocker(t, c, "bsm-redislock", 1, "expired", opts{ttl: 300 * time.Millisecond})
		la := acquire(t, a, time.Second)
		time.Sleep(400 * time.Millisecond)
		left, err := la.Data.(*redislock.Lock).TTL(ctx)
		if left != 0 || err != nil {
			t.Errorf("lock.TTL after the key expired: %v, %v; want 0, nil", left, err)
		}
		if a.(algorithms.Validator).Valid(la) {
			t.Error("Valid true after the key expired")
		}
		if err := a.Release(ctx, la); !errors.Is(err, algorithms.ErrNotHeld) {
			t.Errorf("Release of an expired lock: %v, want ErrNotHeld", err)
		}
	})

	// Another client's key under our name: TTL compares the token, so it is 0 for us too.
	t.Run("taken-over", func(t *testing.T) {
		a := newLocker(t, c, "bsm-redislock", 1, "taken", opts{ttl: ttl})
		la := acquire(t, a, time.Second)
		if err := direct(t, c, 0).Set(ctx, "taken", "someone-else", ttl).Err(); err != nil {
			t.Fatal(err)
		}
		if a.(algorithms.Validator).Valid(la) {
			t.Error("Valid true while another client's token is in the key")
		}
	})

	t.Run("refresh", func(t *testing.T) {
		const short = 300 * time.Millisecond
		a := newLocker(t, c, "bsm-redislock-refresh", 1, "refresh", opts{ttl: short})
		b := newLocker(t, c, "bsm-redislock-refresh", 2, "refresh", opts{ttl: short})
		la := acquire(t, a, time.Second)
		if la.Validity != 0 || la.TTL != short {
			t.Errorf("lease %+v, want Validity 0 (until released), TTL %v", la, short)
		}
		time.Sleep(3 * short) // three TTLs: only Refresh keeps the key
		if !a.(algorithms.Validator).Valid(la) {
			t.Error("Valid false while the refresh loop runs")
		}
		if d := pttl(t, direct(t, c, 0), "refresh"); d <= 0 {
			t.Errorf("PTTL %v after 3 TTLs: Refresh did not keep the key", d)
		}
		if lb, err := tryFor(b, 2*short); err == nil {
			t.Errorf("B acquired a refreshed lock: %+v", lb)
		}
		// The key deleted behind the holder's back: the next Refresh fails and it gives up.
		if err := direct(t, c, 0).Del(ctx, "refresh").Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(short)
		if a.(algorithms.Validator).Valid(la) {
			t.Error("Valid true a TTL after the key was deleted: the failed Refresh was ignored")
		}
		if err := a.Release(ctx, la); !errors.Is(err, algorithms.ErrNotHeld) {
			t.Errorf("Release after the key was deleted: %v, want ErrNotHeld", err)
		}
	})
}

func TestRueidislock(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 3, Proxies: true})
	ctx := context.Background()
	const ttl = 2 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "rueidislock", 1, "handover", opts{ttl: ttl})
		b := newLocker(t, c, "rueidislock", 2, "handover", opts{ttl: ttl})
		libHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.Validity != 0 || l.TTL != ttl || l.Fence != 0 {
				t.Errorf("lease %+v, want Validity 0 (auto-extended until released), TTL %v, no fence", l, ttl)
			}
			held := 0
			for i := range 3 {
				if d := pttl(t, direct(t, c, 0), fmt.Sprintf("rueidislock:%d:handover", i)); d > 0 && d <= ttl {
					held++
				}
			}
			if held < 2 {
				t.Errorf("%d of the 3 keys set with an expiry, want a majority", held)
			}
		})
	})

	t.Run("extended", func(t *testing.T) {
		const short = 400 * time.Millisecond
		a := newLocker(t, c, "rueidislock", 1, "extended", opts{ttl: short})
		la := acquire(t, a, time.Second)
		time.Sleep(3 * short)
		if !a.(algorithms.Validator).Valid(la) {
			t.Error("the lock's context ended while the library extends it")
		}
		if err := a.Release(ctx, la); err != nil {
			t.Errorf("Release: %v", err)
		}
	})

	// The README: the context is "canceled automatically and immediately once the KeyMajority is
	// not held anymore", e.g. when the keys are deleted by others (client-side caching tells).
	t.Run("keys-deleted", func(t *testing.T) {
		a := newLocker(t, c, "rueidislock", 1, "deleted", opts{ttl: 5 * time.Second})
		la := acquire(t, a, time.Second)
		if err := direct(t, c, 0).Del(ctx, "rueidislock:0:deleted", "rueidislock:1:deleted", "rueidislock:2:deleted").Err(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Second)
		for a.(algorithms.Validator).Valid(la) {
			if time.Now().After(deadline) {
				t.Fatal("the lock's context still live 1 s after its keys were deleted (the README says immediately)")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := a.Release(ctx, la); !errors.Is(err, algorithms.ErrNotHeld) {
			t.Errorf("Release after the library gave the lock up: %v, want ErrNotHeld", err)
		}
	})
}

func TestZKLock(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.ZooKeeper, Nodes: 1, Clients: 3, Proxies: true})
	ctx := context.Background()
	const session = 2 * time.Second

	t.Run("handover", func(t *testing.T) {
		a := newLocker(t, c, "zk-lock", 1, "handover", opts{ttl: session})
		b := newLocker(t, c, "zk-lock", 2, "handover", opts{ttl: session})
		checkHandOver(t, a, b, func(t *testing.T, l algorithms.Lease) {
			if l.TTL != session || l.Validity != 0 || l.Fence != 0 {
				t.Errorf("lease %+v, want TTL = session timeout %v, Validity 0 (held until released), no fence", l, session)
			}
		})
		// Again, now that A's timed-out Lock (abandoned by mustWait) had to give its win back.
		checkHandOver(t, b, a, nil)
	})

	// samuel/go-zookeeper #20: the recipe never tells its holder the lock is gone. Its node is
	// deleted (as the server does when the session expires): another client gets the lock, and
	// the holder has nothing to ask — the Locker is no Validator — until its Unlock fails.
	t.Run("never-told", func(t *testing.T) {
		a := newLocker(t, c, "zk-lock", 1, "told", opts{ttl: session})
		b := newLocker(t, c, "zk-lock", 2, "told", opts{ttl: session})
		if _, ok := a.(algorithms.Validator); ok {
			t.Fatal("zk-lock is a Validator: the library offers nothing to build it on")
		}
		la := acquire(t, a, 5*time.Second)
		conn, _, err := zk.Connect([]string{c.Nodes()[0].Addr}, session, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		children, _, err := conn.Children("/lockchaos/told")
		if err != nil || len(children) != 1 {
			t.Fatalf("lock nodes %v (%v), want the holder's one", children, err)
		}
		if err := conn.Delete("/lockchaos/told/"+children[0], -1); err != nil {
			t.Fatal(err)
		}
		lb := acquire(t, b, 5*time.Second)
		if err := a.Release(ctx, la); !errors.Is(err, algorithms.ErrNotHeld) {
			t.Errorf("holder's Unlock after its node was deleted: %v, want ErrNotHeld", err)
		}
		if err := b.Release(ctx, lb); err != nil {
			t.Errorf("B Release: %v", err)
		}
	})
}

// libHandOver is checkHandOver for a library whose acquire request a deadline may cut off (its
// outcome then rightly unknown, its error the request's): B's short wait under A's lock must
// fail, however.
func libHandOver(t *testing.T, a, b algorithms.Locker, check func(*testing.T, algorithms.Lease)) {
	t.Helper()
	la := acquire(t, a, 5*time.Second)
	if check != nil {
		check(t, la)
	}
	if lb, err := tryFor(b, 300*time.Millisecond); err == nil {
		t.Fatalf("B acquired a held lock: %+v", lb)
	}
	got := make(chan error, 1)
	go func() {
		lb, err := tryFor(b, 10*time.Second)
		if err == nil {
			err = b.Release(context.Background(), lb)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("B acquired (or failed: %v) while A holds", err)
	default:
	}
	if err := a.Release(context.Background(), la); err != nil {
		t.Fatalf("A Release: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("B after A released: %v", err)
	}
}

func tryFor(l algorithms.Locker, d time.Duration) (algorithms.Lease, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return l.Acquire(ctx)
}

// TestGoLibraryVersions: the version `lockchaos list` shows for each library is the one go.mod
// requires, so a module upgrade cannot leave the listing, and the measured columns, naming
// another.
func TestGoLibraryVersions(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for alg, module := range map[string]string{
		"bsm-redislock": "github.com/bsm/redislock", "bsm-redislock-refresh": "github.com/bsm/redislock",
		"rueidislock": "github.com/redis/rueidis", "zk-lock": "github.com/go-zookeeper/zk",
		"redsync": "github.com/go-redsync/redsync/v4", "pglock": "cirello.io/pglock",
	} {
		info, err := algorithms.Lookup(alg)
		if err != nil {
			t.Fatal(err)
		}
		version := ""
		for _, line := range strings.Split(string(mod), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == module {
				version = f[1]
			}
		}
		if version == "" {
			t.Errorf("%s: go.mod requires no %s", alg, module)
			continue
		}
		if want := module + " " + version; !strings.HasPrefix(info.Source, want) {
			t.Errorf("%s: Source %q, want it to start with %q (go.mod)", alg, info.Source, want)
		}
	}
}
