// Package db opens the relational store (SQLite by default, PostgreSQL when
// DATABASE_URL says so) through bun, applies the migrations, and holds the
// queries of every resource, one file per resource.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/lorekb/lore/internal/sealed"
)

// DB wraps bun.DB with the facts queries need about the dialect.
type DB struct {
	*bun.DB
	changes changeHooks   // what committed writes touched, for the caches above (changes.go)
	fresh   freshContexts // new threads' contexts until their first read (freshcontext.go)
	// Secrets seals the provider secrets of system configs, data sources
	// and site bot settings at rest (see secrets.go); nil stores them clear.
	Secrets *sealed.Box
	// revisionsOff leaves the revision out of UpdateDocument (SetRevisionsOff).
	revisionsOff atomic.Bool
}

// Open connects to PostgreSQL when dsn starts with postgres:// or postgresql://,
// otherwise treats dsn as a SQLite file path.
func Open(ctx context.Context, dsn string) (*DB, error) {
	var b *bun.DB
	if IsPostgres(dsn) {
		cc, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, err
		}
		// bun writes the arguments into the SQL text, so nearly every
		// statement is new to the server: preparing each one (pgx's default)
		// costs an extra round trip and a plan cache that only churns. The
		// simple protocol sends the text once.
		cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		sqldb := stdlib.OpenDB(*cc)
		sqldb.SetMaxOpenConns(32)
		sqldb.SetMaxIdleConns(32)
		sqldb.SetConnMaxIdleTime(5 * time.Minute)
		b = bun.NewDB(sqldb, pgdialect.New())
	} else {
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", "foreign_keys(0)")
		q.Add("_txlock", "immediate")
		sqldb, err := sql.Open(sqliteshim.ShimName, "file:"+dsn+"?"+q.Encode())
		if err != nil {
			return nil, err
		}
		sqldb.SetMaxOpenConns(8)
		sqldb.SetMaxIdleConns(8)
		b = bun.NewDB(sqldb, sqlitedialect.New())
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.PingContext(pctx); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("db: connect: %w", err)
	}
	return &DB{DB: b}, nil
}

// IsPostgres reports whether dsn names a PostgreSQL server.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Postgres reports whether this database is PostgreSQL.
func (d *DB) Postgres() bool { return d.Dialect().Name() == dialect.PG }

// ErrNotFound is returned by single-row queries that match nothing.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a unique constraint is violated.
var ErrConflict = errors.New("conflict")

// ErrUnavailable means the database could not be reached; the API maps it to 503.
var ErrUnavailable = errors.New("database unavailable")

// Classify maps driver errors to the package's named errors so handlers never
// inspect driver types.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505":
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
		case strings.HasPrefix(pgErr.Code, "08"), pgErr.Code == "57P01", pgErr.Code == "57P03":
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "UNIQUE constraint failed"):
		return fmt.Errorf("%w: %s", ErrConflict, msg)
	case strings.Contains(msg, "connection refused"), strings.Contains(msg, "failed to connect"),
		strings.Contains(msg, "broken pipe"), strings.Contains(msg, "connection reset"),
		strings.Contains(msg, "driver: bad connection"), strings.Contains(msg, "unexpected EOF"):
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return err
}

// Health pings the database within a short deadline.
func (d *DB) Health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var one int
	return d.NewRaw("SELECT 1").Scan(ctx, &one)
}

// Like escapes s for use inside a LIKE pattern with ESCAPE '\'.
func Like(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// LikeOp is the case-insensitive LIKE operator of the dialect.
func (d *DB) LikeOp() string {
	if d.Postgres() {
		return "ILIKE"
	}
	return "LIKE"
}

// RunInTx runs fn in a transaction and classifies its error.
func (d *DB) Tx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return Classify(d.RunInTx(ctx, nil, fn))
}
