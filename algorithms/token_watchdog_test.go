package algorithms_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/servertest"
)

// cut black-holes client cl's link to every node (toxiproxy timeout 0 on both streams, as the
// partition fault does) until the returned func heals it.
func cut(t *testing.T, c cluster.Cluster, cl int) func() {
	t.Helper()
	var heal []func()
	for _, n := range c.Nodes() {
		link, err := c.Link(cl, n.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"upstream", "downstream"} {
			name := "cut-" + s
			body := `{"name":"` + name + `","type":"timeout","stream":"` + s + `","attributes":{"timeout":0}}`
			if _, err := link.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
				t.Fatal(err)
			}
			heal = append(heal, func() { _ = link.Toxics.RemoveToxic(context.Background(), name) })
		}
	}
	done := false
	h := func() {
		if !done {
			done = true
			for _, f := range heal {
				f()
			}
		}
	}
	t.Cleanup(h)
	return h
}

func validator(t *testing.T, l algorithms.Locker) algorithms.Validator {
	t.Helper()
	v, ok := l.(algorithms.Validator)
	if !ok {
		t.Fatalf("%T is not an algorithms.Validator", l)
	}
	return v
}

// TestTokenWatchdog: the watchdog keeps the lease past many TTLs while renewals succeed, stops on
// Release and Close, and gives the lease up (Valid false) at the first failed renewal — before
// the key can expire and another client be granted. The blind mutant keeps believing.
func TestTokenWatchdog(t *testing.T) {
	t.Parallel()
	c := servertest.Start(t, cluster.Spec{Topology: cluster.RedisSingle, Clients: 3, Proxies: true})
	r := master(t, c)
	const ttl = 300 * time.Millisecond
	ctx := context.Background()

	t.Run("renews", func(t *testing.T) {
		a := newLocker(t, c, "token+watchdog", 1, "renew", opts{ttl: ttl})
		b := newLocker(t, c, "token+watchdog", 2, "renew", opts{ttl: ttl})
		la := acquire(t, a, 5*time.Second)
		if la.Validity != 0 || la.TTL != ttl {
			t.Errorf("lease %+v: want Validity 0 (held until released) and TTL %v", la, ttl)
		}
		time.Sleep(4 * ttl)
		if !validator(t, a).Valid(la) {
			t.Fatal("Valid false after 4×TTL although every renewal could succeed")
		}
		if v, err := r.Get(ctx, "renew").Result(); err != nil || v != la.Data.(string) {
			t.Fatalf("key after 4×TTL = %q, %v; want our token %q (the watchdog did not renew)", v, err, la.Data)
		}
		mustWait(t, b, 200*time.Millisecond)
		if err := a.Release(ctx, la); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if validator(t, a).Valid(la) {
			t.Error("Valid true after Release")
		}
		if n := r.Exists(ctx, "renew").Val(); n != 0 {
			t.Errorf("key still there after Release")
		}
	})

	t.Run("close-stops", func(t *testing.T) {
		info, _ := algorithms.Lookup("token+watchdog")
		ep := c.Endpoints(1)
		l, err := info.New(algorithms.Config{Client: 1, Name: "close", TTL: ttl, Addrs: ep.Addrs, Dial: ep.Dial,
			Rand: rand.New(rand.NewPCG(1, 7))})
		if err != nil {
			t.Fatal(err)
		}
		acquire(t, l, 5*time.Second)
		if err := l.(algorithms.Closer).Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		time.Sleep(ttl + 100*time.Millisecond)
		if n := r.Exists(ctx, "close").Val(); n != 0 {
			t.Errorf("key alive %v after Close: the watchdog still renews", ttl+100*time.Millisecond)
		}
	})

	for _, alg := range []string{"token+watchdog", "token-watchdog-blind"} {
		t.Run("partitioned/"+alg, func(t *testing.T) {
			key := "cut-" + alg
			a := newLocker(t, c, alg, 1, key, opts{ttl: ttl})
			b := newLocker(t, c, alg, 2, key, opts{ttl: ttl})
			la := acquire(t, a, 5*time.Second)
			heal := cut(t, c, 1)
			t0 := time.Now()
			gaveUp := make(chan time.Duration, 1)
			go func() {
				for time.Since(t0) < 3*ttl {
					if !validator(t, a).Valid(la) {
						gaveUp <- time.Since(t0)
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
				close(gaveUp)
			}()
			lb := acquire(t, b, 5*time.Second)
			granted := time.Since(t0)
			d, ok := <-gaveUp
			t.Logf("%s: holder gave up after %v (ok %v), other client granted after %v", alg, d, ok, granted)
			switch {
			case alg == "token-watchdog-blind" && ok:
				t.Errorf("the blind holder gave its lease up after %v", d)
			case alg == "token+watchdog" && !ok:
				t.Errorf("the holder still believes its lease 3×TTL after it was cut off; B was granted after %v", granted)
			case alg == "token+watchdog" && d >= granted:
				t.Errorf("the holder gave up after %v, after B was granted (%v)", d, granted)
			}
			heal()
			if err := b.Release(ctx, lb); err != nil {
				t.Errorf("B Release: %v", err)
			}
		})
	}
}
