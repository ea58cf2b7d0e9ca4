package models

import (
	"time"

	"github.com/uptrace/bun"
)

// Data source types: Lore's own object store, or an external S3-compatible
// bucket.
const (
	DataSourceInternal = "internal"
	DataSourceS3       = "s3"
)

// DataSource is a place files are imported from. SiteID scopes it: a site's
// data source is managed by that site's administrators; one without a site
// belongs to the tenant and only admins see it.
type DataSource struct {
	bun.BaseModel `bun:"table:data_sources"`
	ID            int64     `bun:"id,pk,autoincrement"`
	TenantID      int64     `bun:"tenant_id,notnull"`
	SiteID        *int64    `bun:"site_id"`
	Name          string    `bun:"name,notnull"`
	Type          string    `bun:"type,notnull"`
	Description   string    `bun:"description,notnull,default:''"`
	Config        string    `bun:"config,notnull,default:'{}'"` // JSON; holds the secret key of an external bucket
	CreatedAt     time.Time `bun:"created_at,notnull"`
	UpdatedAt     time.Time `bun:"updated_at,notnull"`
}

// ImportItem records the document one file of an import created. Its key
// (import, file index) is the primary key, so a retried import activity
// finds the document it already made instead of creating a second one.
type ImportItem struct {
	bun.BaseModel `bun:"table:import_items"`
	ImportID      string    `bun:"import_id,pk"`
	ItemIndex     int       `bun:"item_index,pk"`
	DocumentID    int64     `bun:"document_id,notnull"`
	CreatedAt     time.Time `bun:"created_at,notnull"`
}
