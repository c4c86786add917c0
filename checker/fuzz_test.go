package checker

import (
	"bytes"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// FuzzCheck checks whatever history the decoder accepts: the checker must never panic on a file
// a user hands to `lockchaos check`, however odd its times, ids and pairings.
func FuzzCheck(f *testing.F) {
	b := newHB("token", 100*time.Millisecond)
	a := b.acquire(1, 0, 1)
	b.read(1, a, 2, 3, 0)
	c := b.acquire(2, 5, 120)
	b.read(2, c, 121, 122, 0)
	b.write(2, c, 123, 124, 1)
	b.write(1, a, 150, 151, 1)
	b.op(history.OpRelease, 2, c, 152, history.TypeInfo, 160, nil, "i/o timeout")
	b.faultSpan("client-pause", 4, 140, "")
	var buf bytes.Buffer
	buf.WriteString(`{"type":"meta","algorithm":"token","scenario":"s","backend":"local","seed":1,"clients":2,"ttl_ns":100000000,"started":"","version":""}` + "\n")
	for _, e := range b.h.Events {
		buf.Write(history.AppendJSON(nil, e))
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"type":"meta","ttl_ns":-5}` + "\n" + `{"type":"invoke","id":3,"op":"release","acq":3,"at_ns":9}` + "\n" +
		`{"type":"ok","id":3,"at_ns":1}` + "\n" + `{"type":"invoke","id":4,"op":"write","acq":3,"at_ns":2,"value":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := history.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		if len(h.Events) > 2000 {
			return // porcupine's search is exponential in the worst case; keep each input quick
		}
		r := CheckHistory(h, Options{Timeout: 200 * time.Millisecond}).Result
		switch r.Verdict {
		case Safe, Unsafe, Stuck, Unknown:
		default:
			t.Fatalf("verdict %q", r.Verdict)
		}
		if (r.Verdict == Unsafe) != (r.ViolationClass != nil) {
			t.Fatalf("verdict %s with class %v", r.Verdict, r.ViolationClass)
		}
	})
}

// FuzzCheckOverlap generates histories of a correct lock with one overlap injected: whatever the
// shape, the run must never be judged safe.
func FuzzCheckOverlap(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint16(200), uint16(7), false, true)
	f.Add(uint64(2), uint8(1), uint16(8), uint16(0), true, false)
	f.Add(uint64(3), uint8(40), uint16(4000), uint16(999), true, true)
	f.Fuzz(func(t *testing.T, seed uint64, clients uint8, ops uint16, at uint16, service, noise bool) {
		cfg := genConfig{Clients: int(clients%50) + 2, Ops: int(ops%4000) + 4, TTL: time.Millisecond, Seed: seed, Noise: noise, Inject: injectClient}
		if service {
			cfg.Inject = injectService
		}
		cfg.InjectAt = int(at) % max(cfg.Ops/4, 1)
		r := CheckHistory(generate(cfg), Options{Timeout: 5 * time.Second}).Result
		if r.Verdict == Safe || r.ExclusionViolations == 0 {
			t.Fatalf("%+v: verdict %s with %d exclusion violations", cfg, r.Verdict, r.ExclusionViolations)
		}
	})
}
