package env

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// AdminURL is the PostgreSQL server for the scratch database:
// $LORE_BENCH_PG_URL, else $LORE_TEST_PG_URL, else the local trust-auth
// server on 127.0.0.1:5432.
func AdminURL() string {
	for _, k := range []string{"LORE_BENCH_PG_URL", "LORE_TEST_PG_URL"} {
		if u := os.Getenv(k); u != "" {
			return u
		}
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// ScratchDB is a freshly created database, dropped by Drop.
type ScratchDB struct {
	Name     string
	DSN      string
	AdminURL string
}

// CreateDB creates a uniquely named database on the server at adminURL.
func CreateDB(ctx context.Context, adminURL string) (*ScratchDB, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL (%s): %w", redact(adminURL), err)
	}
	defer conn.Close(context.Background())
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	name := "lorebench_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + name
	return &ScratchDB{Name: name, DSN: u.String(), AdminURL: adminURL}, nil
}

// Drop removes the database, terminating leftover connections. It retries
// for up to two minutes, so a server restarted meanwhile (other test suites
// on the machine may do that) still gets cleaned up.
func (d *ScratchDB) Drop() error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := d.drop()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(2 * time.Second)
	}
}

func (d *ScratchDB) drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.AdminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+d.Name+" WITH (FORCE)")
	return err
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "?"
	}
	return u.Redacted()
}

// DropDB drops the named database on the server at adminURL (for databases
// a child process created, such as the Temporal server's).
func DropDB(adminURL, name string) error {
	return (&ScratchDB{Name: name, AdminURL: adminURL}).Drop()
}

// PGParts splits a PostgreSQL URL into host, port, user and password, for
// tools that take them as flags (defaults 127.0.0.1, 5432, postgres).
func PGParts(adminURL string) (host, port, user, password string) {
	host, port, user = "127.0.0.1", "5432", "postgres"
	u, err := url.Parse(adminURL)
	if err != nil {
		return
	}
	if h := u.Hostname(); h != "" {
		host = h
	}
	if p := u.Port(); p != "" {
		port = p
	}
	if u.User != nil {
		user = u.User.Username()
		password, _ = u.User.Password()
	}
	return
}
