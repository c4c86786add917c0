package reports

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeAtomic writes a file through write into a temporary file in the same directory, syncs it
// and renames it over path, so a reader (or a crash) sees either the old file or the whole new
// one, never half a report.
func writeAtomic(path string, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err = write(bw); err != nil {
		return fmt.Errorf("reports: write %s: %w", base, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("reports: write %s: %w", base, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("reports: sync %s: %w", base, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("reports: close %s: %w", base, err)
	}
	// CreateTemp makes the file 0600; reports are meant to be read by anyone who can read the dir.
	if err = os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// WriteFile writes b to path atomically: a reader, or a crash, sees the old file or the whole
// new one. The pages of explore and soak are written so.
func WriteFile(path string, b []byte) error {
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// writeJSONAtomic writes v as indented JSON with a trailing newline.
func writeJSONAtomic(path string, v any) error {
	return writeAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}
