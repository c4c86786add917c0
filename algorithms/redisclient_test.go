package algorithms

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomToken writes by hand what fmt's "c%d-%016x%016x" wrote: a run's tokens stay what its seed
// made them before.
func TestRandomTokenFormat(t *testing.T) {
	for _, client := range []int{0, 1, 7, 32, 1234} {
		for seed := range uint64(50) {
			got := randomToken(Config{Client: client, Rand: rand.New(rand.NewPCG(seed, uint64(client)))})
			r := rand.New(rand.NewPCG(seed, uint64(client)))
			want := fmt.Sprintf("c%d-%016x%016x", client, r.Uint64(), r.Uint64())
			if got != want {
				t.Fatalf("client %d seed %d: %q, want %q", client, seed, got, want)
			}
		}
	}
	// Small values keep their leading zeros.
	if got := string(appendHex16(nil, 0xab)); got != "00000000000000ab" {
		t.Fatalf("appendHex16(0xab) = %q", got)
	}
}
