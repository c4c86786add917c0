package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

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
