package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/histgen"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "gen" {
		os.MkdirAll("/tmp/big", 0o755)
		histgen.WriteFile("/tmp/big/history.jsonl", histgen.Config{Clients: 5, Ops: 1000000, TTL: time.Second, Seed: 1, Noise: true})
		return
	}
	t := time.Now()
	h, err := history.ReadRunFile("/tmp/big/history.jsonl")
	if err != nil {
		panic(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Println("read", time.Since(t), len(h.Ops), "heap MB", ms.HeapAlloc>>20)
	out := checker.CheckRun(h, checker.Options{})
	runtime.GC()
	runtime.ReadMemStats(&ms)
	fmt.Println("checked", time.Since(t), out.Result.Verdict, "heap MB", ms.HeapAlloc>>20, "total alloc MB", ms.TotalAlloc>>20)
	f, _ := os.Create("/tmp/heap.prof")
	pprof.WriteHeapProfile(f)
	f.Close()
	runtime.KeepAlive(out)
	runtime.KeepAlive(h)
}
