package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// File is the YAML form of user scenarios: `scenarios: [ {name: ..., faults: [...], expect: {...}} ]`.
type File struct {
	Scenarios []Scenario `yaml:"scenarios"`
}

// LoadFile reads user scenarios from a YAML file. Unknown fields and wrong types are errors that
// name the file, the line and the field.
func LoadFile(path string) ([]Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario file: %w", err)
	}
	ss, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("scenario file %s: %w", path, err)
	}
	return ss, nil
}

// Parse decodes and validates a scenario file's contents.
func Parse(b []byte) ([]Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file (want `scenarios:` with a list of scenarios)")
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			// One line: "line 3: field colour not found in type scenarios.Scenario; line 7: ..."
			return nil, fmt.Errorf("%s (the fields are those of lockchaos list --json)", strings.Join(te.Errors, "; "))
		}
		return nil, err
	}
	if len(f.Scenarios) == 0 {
		return nil, errors.New("no scenarios (want `scenarios:` with a list of scenarios)")
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err == nil {
		markZeros(&root, f.Scenarios)
	}
	seen := map[string]bool{}
	for i, s := range f.Scenarios {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("scenarios[%d]: %w", i, err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("scenarios[%d]: name %q used twice", i, s.Name)
		}
		seen[s.Name] = true
	}
	return f.Scenarios, nil
}

// markZeros sets Workload.ZeroHold and ZeroThink where the file says "hold: 0s" or "think: 0s"
// (in a scenario's workload or a variant's): the decoded zero alone cannot tell them from an
// absent field, which takes the default.
func markZeros(root *yaml.Node, ss []Scenario) {
	list := mapValue(docOf(root), "scenarios")
	if list == nil || list.Kind != yaml.SequenceNode {
		return
	}
	for i, sn := range list.Content {
		if i >= len(ss) {
			return
		}
		zeros(mapValue(sn, "workload"), &ss[i].Workload)
		if vs := mapValue(sn, "variants"); vs != nil && vs.Kind == yaml.MappingNode {
			for k := 0; k+1 < len(vs.Content); k += 2 {
				name := vs.Content[k].Value
				if v, ok := ss[i].Variants[name]; ok {
					zeros(mapValue(vs.Content[k+1], "workload"), &v.Workload)
					ss[i].Variants[name] = v
				}
			}
		}
	}
}

func zeros(n *yaml.Node, w *Workload) {
	for _, f := range []struct {
		key string
		set *bool
	}{{"hold", &w.ZeroHold}, {"think", &w.ZeroThink}} {
		if v := mapValue(n, f.key); v != nil {
			if d, err := time.ParseDuration(strings.TrimSpace(v.Value)); err == nil && d == 0 {
				*f.set = true
			}
		}
	}
}

func docOf(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return n.Content[0]
	}
	return n
}

// mapValue returns the value of key in mapping n, nil when n is not a mapping or has no key.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
