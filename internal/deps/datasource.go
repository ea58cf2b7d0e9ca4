package deps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/lorekb/lore/internal/datasource"
	"github.com/lorekb/lore/internal/datasource/blobsrc"
	"github.com/lorekb/lore/internal/datasource/s3src"
	"github.com/lorekb/lore/models"
)

// OutboundTransport carries requests to addresses an administrator typed in
// (external buckets, document processors). nil means Deps.Outbound: the
// transport checked by Guard at connect time.
var OutboundTransport http.RoundTripper

// Outbound is the transport of administrator-typed addresses: the override
// above, or the guarded transport (see Guard).
func (d *Deps) Outbound() http.RoundTripper {
	if OutboundTransport != nil {
		return OutboundTransport
	}
	return d.GuardedClient().Transport
}

// DataSourceRoot is the folder of an internal data source in Lore's store:
// under its site when it has one (deleting the site removes it).
func DataSourceRoot(ds *models.DataSource) string {
	if ds.SiteID != nil {
		return fmt.Sprintf("sites/%d/datasources/%d/", *ds.SiteID, ds.ID)
	}
	return fmt.Sprintf("datasources/%d/", ds.ID)
}

// DataSource opens the files of a data source.
func (d *Deps) DataSource(_ context.Context, ds *models.DataSource) (datasource.Source, error) {
	switch ds.Type {
	case models.DataSourceInternal:
		if d.Blob == nil {
			return nil, fmt.Errorf("no object store configured")
		}
		return &blobsrc.Source{Store: d.Blob, Root: DataSourceRoot(ds)}, nil
	case models.DataSourceS3:
		var c s3src.Config
		if err := json.Unmarshal([]byte(ds.Config), &c); err != nil {
			return nil, fmt.Errorf("config: %v", err)
		}
		return s3src.New(c, d.Outbound())
	}
	return nil, fmt.Errorf("unknown data source type %q", ds.Type)
}
