package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/datasource"
	"github.com/lorekb/lore/internal/datasource/blobsrc"
	"github.com/lorekb/lore/internal/datasource/s3src"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// DataSource is a data source as the API shows it (the reference's
// DataSource, plus site_id); secrets in config are masked.
type DataSource struct {
	ID          int64          `json:"id"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
	TenantID    int64          `json:"tenant_id"`
	SiteID      *int64         `json:"site_id" doc:"the site whose administrators manage it; null: tenant-wide (admins only)"`
	Name        string         `json:"name"`
	Type        string         `json:"type" enum:"internal,s3,git,web"`
	Description *string        `json:"description"`
	Config      map[string]any `json:"config"`
	Sync        *SyncView      `json:"sync,omitempty" doc:"git and web: how it syncs into its site, and the last run"`
}

// DataSourceCreate is the body of POST /data-sources.
type DataSourceCreate struct {
	Name        string         `json:"name" validate:"required,max=100"`
	Type        string         `json:"type" enum:"internal,s3,git,web" validate:"required,oneof=internal s3 git web"`
	SiteID      *int64         `json:"site_id" doc:"required for site administrators, and for git and web (the site they sync into)" validate:"omitempty,min=1"`
	Description *string        `json:"description" validate:"omitempty,max=1000"`
	Config      map[string]any `json:"config" doc:"s3: endpoint, bucket, prefix, access_key, secret_key, region, use_ssl; git: url, branch, paths, token; web: url (a sitemap .xml or a start page), prefix, max_pages, delay_ms, timeout_ms"`
	Sync        *SyncBody      `json:"sync" doc:"git and web: schedule, collection_id, publish, max_delete_share"`
}

// DataSourceUpdate is the body of PUT /data-sources/{id}: absent fields are
// kept; in config an omitted or masked secret_key keeps the stored one,
// unless endpoint changed (then it must be sent again).
type DataSourceUpdate struct {
	Name        *string        `json:"name" validate:"omitempty,min=1,max=100"`
	Description *string        `json:"description" validate:"omitempty,max=1000"`
	Config      map[string]any `json:"config"`
	Sync        *SyncBody      `json:"sync" doc:"git and web: the fields sent replace the stored ones"`
}

// BrowseQuery is the query of GET /data-sources/{id}/browse.
type BrowseQuery struct {
	PageQuery
	Prefix string `query:"prefix" doc:"folder to list, ending in /; empty for the root" validate:"max=1024"`
}

// FileKeyQuery names one file of a data source.
type FileKeyQuery struct {
	Key string `query:"key" doc:"the file's full path in the data source" validate:"required,max=1024"`
}

// UploadedFile is the result of POST /data-sources/{id}/upload.
type UploadedFile struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// DataSourceUploadForm documents the upload body.
type DataSourceUploadForm struct {
	File   string `json:"file" format:"binary" validate:"required"`
	Prefix string `json:"prefix" required:"false" doc:"folder, ending in /"`
}

func (s *Server) dataSourceRoutes() []Route {
	const one = "/data-sources/{id}"
	return append([]Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/data-sources", Tag: "data-sources", Perm: SiteAdminUp,
			Summary: "List data sources (site administrators: those of their sites)", Response: []DataSource{}, Handler: s.listDataSources},
		{Surface: Admin, Method: http.MethodPost, Path: "/data-sources", Tag: "data-sources", Perm: SiteAdminUp,
			Summary: "Create a data source: a folder of Lore's store (internal) or an external S3-compatible bucket (s3, checked on create)",
			Body:    DataSourceCreate{}, Response: DataSource{}, Handler: s.createDataSource},
		{Surface: Admin, Method: http.MethodPut, Path: one, Tag: "data-sources", Perm: SiteAdminUp,
			Summary: "Update a data source (a changed endpoint needs the secret again)", Body: DataSourceUpdate{}, Response: DataSource{}, Handler: s.updateDataSource},
		{Surface: Admin, Method: http.MethodDelete, Path: one, Tag: "data-sources", Perm: SiteAdminUp,
			Summary: "Delete a data source (an internal one's files with it; an external bucket is left as it is)", Response: Message{}, Handler: s.deleteDataSource},
		{Surface: Admin, Method: http.MethodGet, Path: one + "/browse", Tag: "data-sources", Perm: SiteAdminUp,
			Summary: "List the folders and files under a prefix (folders first)", Query: BrowseQuery{}, Response: Page[datasource.Entry]{}, Handler: s.browseDataSource},
		{Surface: Admin, Method: http.MethodPost, Path: one + "/upload", Tag: "data-sources", Perm: SiteAdminUp, Multipart: true,
			Summary: "Upload a file into a folder of the data source", Body: DataSourceUploadForm{}, Response: UploadedFile{}, Handler: s.uploadToDataSource},
		{Surface: Admin, Method: http.MethodDelete, Path: one + "/files", Tag: "data-sources", Perm: SiteAdminUp,
			Summary: "Delete one file of the data source", Query: FileKeyQuery{}, Response: Message{}, Handler: s.deleteDataSourceFile},
		{Surface: Admin, Method: http.MethodPost, Path: one + "/import", Tag: "data-sources", Perm: SiteAdminUp, Created: true,
			Summary: "Import files of the data source as documents (one job; the answer lists its task)",
			Body:    ImportRequest{}, Response: []ImportTask{}, Handler: s.importFromDataSource},
	}, s.dataSourceSyncRoutes()...)
}

func dataSourceView(ds *models.DataSource) DataSource {
	out := DataSource{ID: ds.ID, CreatedAt: ds.CreatedAt, UpdatedAt: ds.UpdatedAt, TenantID: ds.TenantID, SiteID: ds.SiteID,
		Name: ds.Name, Type: ds.Type, Config: map[string]any{}}
	if ds.Description != "" {
		d := ds.Description
		out.Description = &d
	}
	var cfg map[string]any
	if json.Unmarshal([]byte(ds.Config), &cfg) == nil && cfg != nil {
		out.Config = maskTree(cfg).(map[string]any)
	}
	return out
}

// loadDataSource reads the {id} data source of the caller's tenant (any
// tenant's for a platform admin): a site
// administrator only those of their sites, a tenant-wide one only an admin;
// any other is 404, as a missing one.
func (s *Server) loadDataSource(c *fiber.Ctx) (*models.DataSource, error) {
	id, err := pathInt(c, "id")
	if err != nil {
		return nil, err
	}
	ds, err := s.d.DB.GetDataSource(c.UserContext(), id)
	p := principal(c)
	if errors.Is(err, db.ErrNotFound) || (err == nil && !p.IsPlatform() && ds.TenantID != p.User.TenantID) {
		return nil, NotFound("data source")
	}
	if err != nil {
		return nil, err
	}
	switch {
	case p.IsAdmin():
	case ds.SiteID == nil || !p.CanSite(*ds.SiteID, SiteAdminUp):
		return nil, NotFound("data source") // outside the caller's scope: as missing
	}
	return ds, nil
}

func (s *Server) listDataSources(c *fiber.Ctx) error {
	p := principal(c)
	f := db.DataSourceFilter{TenantID: p.User.TenantID}
	if p.IsPlatform() {
		f.TenantID = 0 // every tenant's
	}
	if !p.IsAdmin() {
		f.SiteIDs = p.SiteFilter() // the tenant-wide ones are for admins
	}
	rows, _, err := s.d.DB.ListDataSources(c.UserContext(), f)
	if err != nil {
		return err
	}
	out := make([]DataSource, len(rows))
	for i := range rows {
		out[i] = s.dataSourceViewFull(c, &rows[i])
	}
	return ok(c, out)
}

// s3Config decodes and validates an external bucket's config.
func s3Config(raw map[string]any) (s3src.Config, error) {
	var c s3src.Config
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &c); err != nil {
		return c, Invalid("config: %v", err)
	}
	if err := c.Validate(); err != nil {
		return c, Invalid("%v", err)
	}
	return c, nil
}

// s3Endpoint is where a bucket config sends its keys: the endpoint URL,
// lower-cased ("" when malformed).
func s3Endpoint(c s3src.Config) string {
	u, err := c.URL()
	if err != nil {
		return ""
	}
	return strings.ToLower(strings.TrimRight(u, "/"))
}

// checkEndpoint applies the outbound-address rules of provider endpoints to
// an external bucket when it is saved (a clear 422): metadata, link-local and
// unspecified addresses never, loopback and private ones only when
// LORE_ALLOWED_PROVIDER_HOSTS allows them. Every connection is checked again
// on its resolved address (Deps.Outbound), so a name that resolves inside
// later is refused too.
func (s *Server) checkEndpoint(cfg s3src.Config) error {
	u, err := cfg.URL()
	if err == nil {
		err = s.d.Guard().CheckURL(u)
	}
	if err != nil {
		return Invalid("config.endpoint: %v", err)
	}
	return nil
}

// checkSource reaches an external bucket before it is saved, so a typo in
// the endpoint or a wrong key is a 400 now rather than a failed import later.
func (s *Server) checkSource(c *fiber.Ctx, ds *models.DataSource) error {
	src, err := s.source(c, ds)
	if err != nil {
		return BadRequest("config: %v", err)
	}
	if err := src.Check(c.UserContext()); err != nil {
		return BadRequest("the bucket cannot be reached: %s", redact(err.Error(), ""))
	}
	return nil
}

func (s *Server) createDataSource(c *fiber.Ctx) error {
	var in DataSourceCreate
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	p := principal(c)
	ds := &models.DataSource{TenantID: p.User.TenantID, Name: strings.TrimSpace(in.Name), Type: in.Type, Config: "{}"}
	if ds.Name == "" {
		return Invalid("name: required")
	}
	if in.Description != nil {
		ds.Description = *in.Description
	}
	if in.SiteID != nil {
		site, err := s.bodySite(c, *in.SiteID, SiteAdminUp)
		if err != nil {
			return err
		}
		ds.TenantID, ds.SiteID = site.TenantID, &site.ID // a site in scope (bodySite)
	} else if !p.IsAdmin() {
		return Invalid("site_id: required (a site you manage)")
	}
	if in.Type == models.DataSourceS3 {
		if err := s.setS3Config(c, ds, in.Config); err != nil {
			return err
		}
	}
	if !syncable(in.Type) {
		if in.Sync != nil {
			return Invalid("sync: only git and web data sources sync")
		}
		return s.saveDataSource(c, ds)
	}
	if ds.SiteID == nil {
		return Invalid("site_id: required for a %s data source (the site it syncs into)", in.Type)
	}
	if err := s.setSourceConfig(c, ds, in.Config, false); err != nil {
		return err
	}
	set := &models.SyncSettings{DeleteShare: 0.3}
	if err := s.syncSettings(c, ds, in.Sync, set); err != nil {
		return err
	}
	if err := s.d.DB.SaveDataSource(c.UserContext(), ds); err != nil {
		return err
	}
	if err := s.saveSync(c, ds, set); err != nil {
		_ = s.d.DB.DeleteSyncData(c.UserContext(), ds.ID)
		_ = s.d.DB.DeleteDataSource(c.UserContext(), ds.ID)
		return err
	}
	return ok(c, s.dataSourceViewFull(c, ds))
}

// dataSourceViewFull is dataSourceView with a syncing source's settings
// and last run.
func (s *Server) dataSourceViewFull(c *fiber.Ctx, ds *models.DataSource) DataSource {
	v := dataSourceView(ds)
	v.Sync = s.syncView(c.UserContext(), ds)
	return v
}

// setS3Config validates an external bucket's config, reaches the bucket and
// keeps the config on ds.
func (s *Server) setS3Config(c *fiber.Ctx, ds *models.DataSource, raw map[string]any) error {
	cfg, err := s3Config(raw)
	if err != nil {
		return err
	}
	if err := s.checkEndpoint(cfg); err != nil {
		return err
	}
	b, _ := json.Marshal(cfg)
	ds.Config = string(b)
	return s.checkSource(c, ds)
}

func (s *Server) saveDataSource(c *fiber.Ctx, ds *models.DataSource) error {
	if err := s.d.DB.SaveDataSource(c.UserContext(), ds); err != nil {
		return err
	}
	return ok(c, dataSourceView(ds))
}

func (s *Server) updateDataSource(c *fiber.Ctx) error {
	var in DataSourceUpdate
	ds, err := loadThenBind(c, s.loadDataSource, bindJSON, &in)
	if err != nil {
		return err
	}
	if in.Name != nil {
		if ds.Name = strings.TrimSpace(*in.Name); ds.Name == "" {
			return Invalid("name: required")
		}
	}
	if in.Description != nil {
		ds.Description = *in.Description
	}
	if in.Config != nil && ds.Type == models.DataSourceS3 {
		var old s3src.Config
		_ = json.Unmarshal([]byte(ds.Config), &old)
		merged := toJSONMap(old)
		for k, v := range in.Config {
			merged[k] = v
		}
		// The stored secret only ever goes to the address it was given
		// for: a new endpoint (host, port or scheme) needs it again.
		if sec, _ := in.Config["secret_key"].(string); sec == "" || strings.Contains(sec, maskMarker) {
			var next s3src.Config
			b, _ := json.Marshal(merged)
			_ = json.Unmarshal(b, &next)
			if s3Endpoint(next) != s3Endpoint(old) {
				return Invalid("config.secret_key: the endpoint changed; send the secret again")
			}
		}
		if err := restoreSecrets("config.", merged, toJSONMap(old)); err != nil {
			return err
		}
		if err := s.setS3Config(c, ds, merged); err != nil {
			return err
		}
	}
	if !syncable(ds.Type) {
		if in.Sync != nil {
			return Invalid("sync: only git and web data sources sync")
		}
		return s.saveDataSource(c, ds)
	}
	if in.Config != nil {
		if err := s.setSourceConfig(c, ds, in.Config, true); err != nil {
			return err
		}
	}
	set, err := s.d.DB.GetSyncSettings(c.UserContext(), ds.ID)
	if errors.Is(err, db.ErrNotFound) {
		set, err = &models.SyncSettings{DeleteShare: 0.3}, nil
	}
	if err != nil {
		return err
	}
	if err := s.syncSettings(c, ds, in.Sync, set); err != nil {
		return err
	}
	if err := s.d.DB.SaveDataSource(c.UserContext(), ds); err != nil {
		return err
	}
	if err := s.saveSync(c, ds, set); err != nil {
		return err
	}
	return ok(c, s.dataSourceViewFull(c, ds))
}

func (s *Server) deleteDataSource(c *fiber.Ctx) error {
	ds, err := s.loadDataSource(c)
	if err != nil {
		return err
	}
	if syncable(ds.Type) {
		s.deleteSchedule(c.UserContext(), ds.ID)
		if err := s.d.DB.DeleteSyncData(c.UserContext(), ds.ID); err != nil {
			return err
		}
	}
	if err := s.d.DB.DeleteDataSource(c.UserContext(), ds.ID); err != nil {
		return err
	}
	if ds.Type == models.DataSourceInternal {
		if store, err := s.blobStore(); err == nil {
			_ = store.DeletePrefix(c.UserContext(), deps.DataSourceRoot(ds))
		}
	}
	return ok(c, Message{Message: "Data source deleted"})
}

// source opens a data source's files: an internal one on this server's
// store, an external bucket through deps.
func (s *Server) source(c *fiber.Ctx, ds *models.DataSource) (datasource.Source, error) {
	if ds.Type == models.DataSourceInternal {
		store, err := s.blobStore()
		if err != nil {
			return nil, err
		}
		return &blobsrc.Source{Store: store, Root: deps.DataSourceRoot(ds)}, nil
	}
	if syncable(ds.Type) {
		return nil, fmt.Errorf("a %s data source is read by POST /data-sources/%d:sync, not browsed", ds.Type, ds.ID)
	}
	return s.d.DataSource(c.UserContext(), ds)
}

// openSource opens the {id} data source's files; an unreachable or broken
// external bucket is a 400 naming the problem.
func (s *Server) openSource(c *fiber.Ctx) (*models.DataSource, datasource.Source, error) {
	ds, err := s.loadDataSource(c)
	if err != nil {
		return nil, nil, err
	}
	src, err := s.source(c, ds)
	if err != nil {
		return nil, nil, BadRequest("data source %d cannot be opened: %v", ds.ID, err)
	}
	return ds, src, nil
}

// sourceError maps a data source failure: refused keys 400, missing files
// 404, the rest (an unreachable bucket) 400 with the reason.
func (s *Server) sourceError(c *fiber.Ctx, err error) error {
	switch {
	case errors.Is(err, datasource.ErrInvalidKey), errors.Is(err, blob.ErrInvalidName):
		return BadRequest("%v", err)
	case errors.Is(err, blob.ErrNotFound):
		return NotFound("file")
	}
	return BadRequest("the data source failed: %v", err)
}

func (s *Server) browseDataSource(c *fiber.Ctx) error {
	var q BrowseQuery
	if err := bindPage(c, &q, 100, 1000); err != nil {
		return err
	}
	_, src, err := s.openSource(c)
	if err != nil {
		return err
	}
	entries, err := src.Browse(c.UserContext(), q.Prefix)
	if err != nil {
		return s.sourceError(c, err)
	}
	total := len(entries)
	lo := min(q.Offset(), total)
	hi := min(lo+q.Limit(), total)
	return paged(c, entries[lo:hi], total, q.PageQuery)
}

func (s *Server) uploadToDataSource(c *fiber.Ctx) error {
	_, src, err := s.openSource(c)
	if err != nil {
		return err
	}
	form, err := s.multipartForm(c, "file")
	if err != nil {
		return err
	}
	defer func() { _ = form.RemoveAll() }()
	files := form.File["file"]
	if len(files) != 1 {
		return Invalid("file: send exactly one file")
	}
	fh := files[0]
	name, err := importFileName(rawFilename(fh))
	if err != nil {
		return err
	}
	if fh.Size == 0 {
		return BadRequest("file: %q is empty", truncate(name, 80))
	}
	prefix := strings.TrimSpace(firstValue(form.Value["prefix"]))
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if err := datasource.CheckPrefix(prefix); err != nil {
		return BadRequest("prefix: %v", err)
	}
	f, err := fh.Open()
	if err != nil {
		return err
	}
	defer f.Close()
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = blob.DefaultContentType
	}
	e, err := src.Put(c.UserContext(), prefix+name, f, fh.Size, ct)
	if err != nil {
		return s.sourceError(c, err)
	}
	return ok(c, UploadedFile{Key: e.Path, Name: e.Name, Size: *e.Size})
}

func (s *Server) deleteDataSourceFile(c *fiber.Ctx) error {
	var q FileKeyQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	_, src, err := s.openSource(c)
	if err != nil {
		return err
	}
	if err := src.Delete(c.UserContext(), q.Key); err != nil {
		return s.sourceError(c, err)
	}
	return ok(c, Message{Message: "File deleted"})
}

func (s *Server) importFromDataSource(c *fiber.Ctx) error {
	ds, err := s.loadDataSource(c)
	if err != nil {
		return err
	}
	if syncable(ds.Type) {
		return BadRequest("a %s data source is read by POST /data-sources/%d:sync", ds.Type, ds.ID)
	}
	var in ImportRequest
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	if max := s.d.Cfg.ImportMaxFiles; len(in.Keys) > max {
		return Invalid("keys: at most %d per import (got %d)", max, len(in.Keys))
	}
	if ds.SiteID != nil && *ds.SiteID != in.SiteID && in.SiteID > 0 {
		return BadRequest("site_id: data source %d belongs to site %d; import into that site", ds.ID, *ds.SiteID)
	}
	plan, err := s.planImport(c, in.SiteID, in.CollectionID, in.ProcessorType, in.Publish, in.AutoVectorize,
		importOptions(in.OCREnabled, in.ExtractImages, in.ExtractTables))
	if err != nil {
		return err
	}
	if plan.site.TenantID != ds.TenantID {
		return BadRequest("site_id: site %d does not exist", plan.site.ID)
	}
	plan.spec.Generate = generateFields(in.GenerateSummary, in.GenerateTags)
	seen := map[string]bool{}
	for i, key := range in.Keys {
		if err := datasource.CheckKey(key); err != nil {
			return BadRequest("keys[%d]: %v", i, err)
		}
		if seen[key] {
			return BadRequest("keys[%d]: %q is listed twice", i, truncate(key, 80))
		}
		seen[key] = true
		f := activities.ImportFile{Name: path.Base(key), Source: activities.SourceDataSource, DataSourceID: ds.ID, Key: key}
		if !plan.supported(f.Name) {
			plan.rejected[i] = s.unsupported(plan, f.Name)
		}
		plan.files = append(plan.files, f)
	}
	if _, err := s.temporalClient(); err != nil {
		return err
	}
	plan.spec.ImportID = workflows.ImportID(plan.site.ID, newImportID())
	task, err := s.startImport(c, plan)
	if err != nil {
		return err
	}
	return created(c, []ImportTask{task})
}
