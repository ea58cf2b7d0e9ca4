package db

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// sqlQuerier is what database/sql's DB, Conn and Tx have in common.
type sqlQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// rawQuerier returns the database/sql handle under a bun handle, so a
// statement can send its arguments as bind parameters (bun writes every
// argument into the SQL text).
func rawQuerier(idb bun.IDB) (sqlQuerier, bool) {
	switch x := idb.(type) {
	case bun.Tx:
		return x.Tx, true
	case *bun.Tx:
		return x.Tx, true
	case *bun.DB:
		return x.DB, true
	case bun.Conn:
		return x.Conn, true
	case *bun.Conn:
		return x.Conn, true
	}
	return nil, false
}

// insertBound inserts rows (pointers to structs of one bun model) on
// PostgreSQL in one INSERT whose values travel as bind parameters in the
// extended protocol instead of SQL literals, and scans what the server
// filled in (ids, defaults) back into the rows, as bun's insert would. It
// follows bun's insert: a nil pointer, or a zero value of a field with a SQL
// default or nullzero, is written as DEFAULT and returned.
//
// Why: a document's content and words are tens of KB each; as literals, bun
// escapes them character by character into the statement and PostgreSQL
// lexes them back out, which costs CPU on both sides of every import batch.
// Statements through it bypass bun's query hooks (lore registers none); a
// handle it cannot see through gets bun's insert.
func insertBound[T any](ctx context.Context, idb bun.IDB, rows []*T) error {
	if len(rows) == 0 {
		return nil
	}
	q, ok := rawQuerier(idb)
	if !ok {
		_, err := idb.NewInsert().Model(&rows).Exec(ctx)
		return err
	}
	table := idb.Dialect().Tables().Get(reflect.TypeOf(rows[0]).Elem())
	fields := table.Fields
	var sb strings.Builder
	sb.WriteString("INSERT INTO ")
	sb.WriteString(string(table.SQLName))
	sb.WriteString(" (")
	for i, f := range fields {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(string(f.SQLName))
	}
	sb.WriteString(") VALUES ")
	// The first argument makes pgx use the extended protocol for this
	// statement (lore's connections default to the simple one, which would
	// write the arguments into the text again), in one round trip.
	args := make([]any, 1, 1+len(rows)*len(fields))
	args[0] = pgx.QueryExecModeExec
	returned := make([]bool, len(fields))
	for r, row := range rows {
		strct := reflect.ValueOf(row).Elem()
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for i, f := range fields {
			if i > 0 {
				sb.WriteString(", ")
			}
			if (f.IsPtr && f.HasNilValue(strct)) || (f.HasZeroValue(strct) && (f.NullZero || f.SQLDefault != "")) {
				sb.WriteString("DEFAULT")
				returned[i] = true
				continue
			}
			args = append(args, f.Value(strct).Interface())
			sb.WriteByte('$')
			sb.WriteString(strconv.Itoa(len(args) - 1))
		}
		sb.WriteByte(')')
	}
	var ret []*schema.Field
	for i, f := range fields {
		if returned[i] {
			ret = append(ret, f)
		}
	}
	if len(ret) > 0 {
		sb.WriteString(" RETURNING ")
		for i, f := range ret {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(string(f.SQLName))
		}
	}
	res, err := q.QueryContext(ctx, sb.String(), args...)
	if err != nil {
		return err
	}
	defer res.Close()
	vals := make([]any, len(ret))
	dest := make([]any, len(ret))
	for i := range vals {
		dest[i] = &vals[i]
	}
	n := 0
	for ; res.Next(); n++ {
		if len(ret) == 0 {
			continue
		}
		if n >= len(rows) {
			return fmt.Errorf("db: insert into %s returned more rows than it inserted", table.Name)
		}
		if err := res.Scan(dest...); err != nil {
			return err
		}
		strct := reflect.ValueOf(rows[n]).Elem()
		for i, f := range ret {
			if err := f.ScanValue(strct, vals[i]); err != nil {
				return fmt.Errorf("db: insert into %s: %s: %w", table.Name, f.Name, err)
			}
		}
	}
	if err := res.Err(); err != nil {
		return err
	}
	if len(ret) > 0 && n != len(rows) {
		return fmt.Errorf("db: insert into %s returned %d rows for %d", table.Name, n, len(rows))
	}
	return nil
}
