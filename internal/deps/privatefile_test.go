package deps

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDatabaseFileIsPrivate: a new SQLite file is created 0600 and an
// existing world-readable one is narrowed to 0600.
func TestDatabaseFileIsPrivate(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new.db")
	if err := privateFile(fresh); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.db")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := privateFile(old); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fresh, old} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v (%v)", p, st.Mode().Perm(), err)
		}
	}
}
