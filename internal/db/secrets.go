package db

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/lorekb/lore/internal/sealed"
	"github.com/lorekb/lore/models"
)

// Provider secrets at rest. Three columns hold JSON documents with secrets
// in them: system_configs.value (model API keys, document-processor keys,
// bot secrets), data_sources.config (an external bucket's keys) and
// sites.bot_config (a site's messenger settings). Their secret values are
// sealed (internal/sealed) whenever this package writes them and opened
// whenever it reads them, so every caller sees clear text and the database
// never holds it. SealStoredSecrets, run at startup, rewrites rows an older
// version stored in clear and proves the configured key opens the rest.

// openDoc opens the sealed values of a stored document.
func (d *DB) openDoc(doc string) (string, error) { return d.Secrets.OpenJSON(doc) }

// withSealed runs write with the document *field sealed, then puts the clear
// document back (the caller keeps using its copy; a RETURNING read-back sees
// the sealed text and is replaced too).
func (d *DB) withSealed(field *string, write func() error) error {
	clear := *field
	*field = d.Secrets.SealJSON(clear)
	err := write()
	*field = clear
	return err
}

// openField opens the stored document *field in place; an error names the
// row with format and args.
func (d *DB) openField(field *string, format string, args ...any) error {
	v, err := d.openDoc(*field)
	if err != nil {
		return fmt.Errorf(format+": %w", append(args, err)...)
	}
	*field = v
	return nil
}

func (d *DB) openSite(s *models.Site) error {
	return d.openField(&s.BotConfig, "site %d bot_config", s.ID)
}

func (d *DB) openSites(sites []models.Site) error {
	for i := range sites {
		if err := d.openSite(&sites[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *DB) openDataSource(ds *models.DataSource) error {
	return d.openField(&ds.Config, "data source %d config", ds.ID)
}

func (d *DB) openConfig(row *models.SystemConfig) error {
	return d.openField(&row.Value, "system config %q of tenant %d", row.ConfigKey, row.TenantID)
}

// secretColumns are the stored documents with secrets: table, key column,
// document column, and how a row is named in an error.
var secretColumns = []struct{ table, doc, what string }{
	{"system_configs", "value", "system config"},
	{"data_sources", "config", "data source"},
	{"sites", "bot_config", "site bot_config"},
}

// secretDoc is one stored document of a secretColumns entry.
type secretDoc struct {
	ID  int64  `bun:"id"`
	Doc string `bun:"doc"`
}

// SealStoredSecrets opens every stored secret with the configured key and
// seals those still in clear (rows written before secrets were encrypted,
// or while no key was configured). A sealed value the key does not open is
// an error naming the row and LORE_SECRET_KEY, so a changed or wrong key
// stops the process at startup instead of sending garbage to a provider. A
// rewrite only replaces the exact text it read, so a write that races it
// (another process saving the row) is never undone. It returns the number
// of rows sealed.
func (d *DB) SealStoredSecrets(ctx context.Context) (int, error) {
	sealedRows := 0
	for _, col := range secretColumns {
		var rows []secretDoc
		err := d.NewSelect().Table(col.table).Column("id").ColumnExpr("? AS doc", bun.Ident(col.doc)).
			OrderExpr("id").Scan(ctx, &rows)
		if err != nil {
			return sealedRows, Classify(err)
		}
		for _, r := range rows {
			if _, err := d.Secrets.OpenJSON(r.Doc); err != nil {
				return sealedRows, fmt.Errorf("stored secrets: %s %d: %w; start with the LORE_SECRET_KEY the secrets were stored with", col.what, r.ID, err)
			}
			if d.Secrets == nil || !sealed.HasClearSecrets(r.Doc) {
				continue
			}
			_, err := d.NewUpdate().Table(col.table).Set("? = ?", bun.Ident(col.doc), d.Secrets.SealJSON(r.Doc)).
				Where("id = ?", r.ID).Where("? = ?", bun.Ident(col.doc), r.Doc).Exec(ctx)
			if err != nil {
				return sealedRows, Classify(err)
			}
			sealedRows++
		}
	}
	return sealedRows, nil
}
