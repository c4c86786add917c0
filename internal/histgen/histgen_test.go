package histgen

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// WriteFile streams the very history Generate builds.
func TestWriteFileIsGenerate(t *testing.T) {
	cfg := Config{Clients: 5, Ops: 4000, TTL: time.Second, Seed: 3, Noise: true, Inject: Client, InjectAt: 300}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := WriteFile(path, cfg); err != nil {
		t.Fatal(err)
	}
	got, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Generate(cfg)
	if len(got.Events) < cfg.Ops || !reflect.DeepEqual(got.Events, want.Events) || got.Meta.Clients != 5 {
		t.Fatalf("file has %d events, Generate %d (equal: %v)", len(got.Events), len(want.Events), reflect.DeepEqual(got.Events, want.Events))
	}
}
