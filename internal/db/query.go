package db

import (
	"context"
	"database/sql"

	"github.com/uptrace/bun"
)

// valuesByID reads the id and one column of the rows of model M whose id is
// among ids and maps each id to value(row); unknown ids are absent.
func valuesByID[M, V any](ctx context.Context, d *DB, ids []int64, column string, value func(*M) (int64, V)) (map[int64]V, error) {
	out := make(map[int64]V, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []M
	err := d.NewSelect().Model(&rows).Column("id", column).Where("id IN (?)", bun.List(ids)).Scan(ctx)
	for i := range rows {
		id, v := value(&rows[i])
		out[id] = v
	}
	return out, Classify(err)
}

// selectOne reads the row of model M that the condition selects.
func selectOne[M any](ctx context.Context, d *DB, where string, args ...any) (*M, error) {
	m := new(M)
	err := d.NewSelect().Model(m).Where(where, args...).Scan(ctx)
	return m, Classify(err)
}

// deleteByID deletes the row of model (a nil pointer of its type) with the
// id: ErrNotFound when there is none, else the driver's error unclassified.
func deleteByID(ctx context.Context, db bun.IDB, model any, id int64) error {
	res, err := db.NewDelete().Model(model).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// oneRow is the error of a write that must touch a row: err classified, or
// ErrNotFound when it touched none.
func oneRow(res sql.Result, err error) error {
	if err != nil {
		return Classify(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
