package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Plan is what a matrix set out to run, recorded in results.json so that the results of shards
// run apart can be checked for completeness and put back together (lockchaos merge).
type Plan struct {
	Algorithms []string `json:"algorithms"`
	Scenarios  []string `json:"scenarios"`
	Runs       int      `json:"runs"`
	// Shard and Shards: this matrix ran shard Shard of Shards (1/1 for a whole matrix).
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	// Catalogue fingerprints the planned scenarios' definitions and expectations: shards built
	// from different catalogues (a changed scenario file, another version) differ here.
	Catalogue string `json:"catalogue"`
	Version   string `json:"version"`
}

// EncodeResults writes the results.json document of cells to w (what `matrix --json` prints).
func EncodeResults(w io.Writer, cells []Cell, meta MatrixMeta) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(resultsDoc(cells, meta, Summarize(cells)))
}

// ErrNoResults is returned by ReadResults when dir holds no results.json.
var ErrNoResults = errors.New("no " + ResultsFile)

// ReadResults reads back the cells and the description of a matrix from dir/results.json.
// Cells' Dir stay relative to dir.
func ReadResults(dir string) ([]Cell, MatrixMeta, error) {
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, MatrixMeta{}, fmt.Errorf("%s: %w", dir, ErrNoResults)
	}
	if err != nil {
		return nil, MatrixMeta{}, err
	}
	var doc resultsFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, MatrixMeta{}, fmt.Errorf("%s: %w", filepath.Join(dir, ResultsFile), err)
	}
	meta := MatrixMeta{Title: doc.Title, Command: doc.Command, Backend: doc.Backend, Version: doc.Version,
		Seed: doc.Seed, Plan: doc.Plan}
	if doc.Started != "" {
		meta.Started, _ = time.Parse(time.RFC3339, doc.Started)
	}
	if doc.Plan != nil {
		meta.Algorithms, meta.Scenarios = doc.Plan.Algorithms, doc.Plan.Scenarios
	}
	cells := make([]Cell, 0, len(doc.Results))
	for _, e := range doc.Results {
		cells = append(cells, Cell{Scenario: e.Scenario, Algorithm: e.Algorithm, Run: e.Run, Dir: e.Dir,
			Result: e.Result, NA: e.NA, Expected: e.Expected, Err: e.Error})
	}
	return cells, meta, nil
}
