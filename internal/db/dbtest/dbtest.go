// Package dbtest gives tests a fresh, migrated database on each dialect: a temp
// SQLite file, and a PostgreSQL database created on 127.0.0.1:5432 (or
// LORE_TEST_PG_URL) and dropped when the test ends.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/lorekb/lore/internal/db"
)

// Dialects lists the dialect names Each runs.
var Dialects = []string{"sqlite", "postgres"}

// AdminURL is the PostgreSQL server used for test databases.
func AdminURL() string {
	if u := os.Getenv("LORE_TEST_PG_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Each runs fn as a subtest once per dialect, each with its own fresh database.
func Each(t *testing.T, fn func(t *testing.T, d *db.DB)) {
	for _, dialect := range Dialects {
		t.Run(dialect, func(t *testing.T) {
			fn(t, Open(t, dialect))
		})
	}
}

// Open returns a migrated fresh database of the dialect, removed at cleanup.
func Open(t testing.TB, dialect string) *db.DB {
	t.Helper()
	dsn := DSN(t, dialect)
	d, err := db.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dialect, err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s: %v", dialect, err)
	}
	return d
}

// DSN creates an empty database of the dialect and returns its DSN; the
// database is dropped (or the file removed) at cleanup.
func DSN(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case "sqlite":
		return filepath.Join(t.TempDir(), "lore.db")
	case "postgres":
		_, dsn, drop, err := CreatePG()
		if err != nil {
			t.Fatalf("create postgres database: %v (is PostgreSQL running on 127.0.0.1:5432?)", err)
		}
		t.Cleanup(drop)
		return dsn
	}
	t.Fatalf("unknown dialect %q", dialect)
	return ""
}

// CreatePG creates a uniquely named PostgreSQL database and returns its DSN
// and a function that drops it (terminating leftover connections).
func CreatePG() (name, dsn string, drop func(), err error) {
	admin, err := sql.Open("pgx", AdminURL())
	if err != nil {
		return "", "", nil, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name = "lore_test_" + hex.EncodeToString(b)
	if _, err = admin.Exec("CREATE DATABASE " + name); err != nil {
		_ = admin.Close()
		return "", "", nil, err
	}
	drop = func() {
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		_ = admin.Close()
	}
	u, err := url.Parse(AdminURL())
	if err != nil {
		drop()
		return "", "", nil, err
	}
	u.Path = "/" + name
	return name, u.String(), drop, nil
}
