package api

import (
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/builtin"
	"github.com/lorekb/lore/internal/convert/processor"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/enrich"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// ImportForm documents the multipart body of documents:import (the
// reference's BodyImportDocument, with several files and publish).
type ImportForm struct {
	Files           []string `json:"files" format:"binary" doc:"one or more files (field file is accepted too)" validate:"required"`
	SiteID          int64    `json:"site_id" validate:"required"`
	CollectionID    int64    `json:"collection_id" required:"false" doc:"a collection of the same site"`
	ProcessorType   string   `json:"processor_type" required:"false" doc:"builtin (default), or the id, name or type (Docling, MinerU, PaddleOCR) of an enabled doc-processor"`
	Publish         bool     `json:"publish" required:"false" doc:"create the documents published (default draft)"`
	AutoVectorize   *bool    `json:"auto_vectorize" required:"false" doc:"vectorize the documents (site_admin or admin); default: as vectorize_mode says for published documents"`
	OCREnabled      bool     `json:"ocr_enabled" required:"false" doc:"passed to external processors"`
	ExtractImages   *bool    `json:"extract_images" required:"false" doc:"keep pictures (stored as files of the site); default true"`
	ExtractTables   *bool    `json:"extract_tables" required:"false" doc:"passed to external processors; default true"`
	GenerateSummary bool     `json:"generate_summary" required:"false" doc:"fill each document's summary as documents:aiGenerate does (the chat model, else extractive)"`
	GenerateTags    bool     `json:"generate_tags" required:"false" doc:"fill each document's tags the same way"`
}

// ImportRequest is the JSON body of an import from a data source (the
// reference's DataSourceImportRequest, plus publish).
type ImportRequest struct {
	Keys          []string `json:"keys" doc:"object keys of the data source" validate:"required,min=1,dive,max=1024"`
	SiteID        int64    `json:"site_id" validate:"required,min=1"`
	CollectionID  int64    `json:"collection_id" validate:"min=0"`
	ProcessorType string   `json:"processor_type" validate:"max=100"`
	Publish       bool     `json:"publish"`
	AutoVectorize *bool    `json:"auto_vectorize"`
	OCREnabled    bool     `json:"ocr_enabled"`
	ExtractImages *bool    `json:"extract_images"`
	ExtractTables *bool    `json:"extract_tables"`
	// DuplicateStrategy is accepted for the reference's clients; every file
	// of a request becomes a document (allow).
	DuplicateStrategy string `json:"duplicate_strategy" validate:"omitempty,oneof=allow skip"`
	// GenerateSummary and GenerateTags fill each document's summary and
	// tags as documents:aiGenerate does.
	GenerateSummary bool `json:"generate_summary"`
	GenerateTags    bool `json:"generate_tags"`
}

// ImportTask is an import job as the reference's Task shows it; progress and
// per-file results are at /jobs/{id} (and :watch).
type ImportTask struct {
	ID        string         `json:"id" doc:"the job id (workflow id import-<site>-<id>)"`
	JobID     string         `json:"job_id"`
	TaskType  string         `json:"task_type" enum:"import"`
	Status    string         `json:"status" enum:"pending,running,completed,failed"`
	Progress  int            `json:"progress" doc:"percent"`
	SiteID    int64          `json:"site_id"`
	TenantID  int64          `json:"tenant_id"`
	Payload   map[string]any `json:"payload"`
	Result    map[string]any `json:"result"`
	Error     *string        `json:"error"`
	CreatedBy string         `json:"created_by"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

func (s *Server) importRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/documents:import", Tag: "documents", Perm: EditorUp, Multipart: true, Created: true,
			Summary: "Import files as documents (one durable job; per-file progress at /jobs/{id})",
			Description: "Each file is fetched, converted to Markdown (built-in converters or an external doc-processor), its images stored " +
				"as files of the site, and created as a document titled by the file's own title, its first heading, or its name. " +
				"A file that cannot be converted (unsupported, encrypted, corrupt, over LORE_IMPORT_MAX_BYTES) fails alone with its reason.",
			Body: ImportForm{}, Response: ImportTask{}, Handler: s.importDocuments},
	}
}

// importPlan is a validated import, ready to start.
type importPlan struct {
	site      *models.Site
	spec      activities.ImportSpec
	files     []activities.ImportFile
	rejected  map[int]string // index → reason known before the run
	uploadDir string
}

// planImport validates what every import shares: site, collection,
// processor and the vectorize choice. Nothing is written.
func (s *Server) planImport(c *fiber.Ctx, siteID, collectionID int64, proc string, publish bool,
	autoVec *bool, opts map[string]any) (*importPlan, error) {
	if siteID < 1 {
		return nil, Invalid("site_id: required")
	}
	site, err := s.bodySite(c, siteID, EditorUp)
	if err != nil {
		return nil, err
	}
	spec := activities.ImportSpec{TenantID: site.TenantID, SiteID: site.ID, Status: models.DocDraft,
		Options: opts, MaxBytes: s.d.Cfg.ImportMaxBytes}
	if publish {
		spec.Status = models.DocPublished
	}
	if collectionID > 0 {
		col, err := s.d.DB.GetCollection(c.UserContext(), collectionID)
		if errors.Is(err, db.ErrNotFound) || (err == nil && col.SiteID != site.ID) {
			return nil, BadRequest("collection_id: collection %d does not exist in site %d", collectionID, site.ID)
		}
		if err != nil {
			return nil, err
		}
		spec.CollectionID = &col.ID
	}
	proc = strings.TrimSpace(proc)
	if proc != "" && !strings.EqualFold(proc, builtin.Name) {
		doc, err := s.processors(c, site.TenantID)
		if err != nil {
			return nil, err
		}
		cfg, ok := doc.Find(proc)
		if !ok {
			return nil, BadRequest("processor_type: %q is not a configured, enabled document processor (use builtin or one of GET /system-configs/doc-processor)", truncate(proc, 80))
		}
		spec.Processor = cfg.ID
	}
	switch {
	case autoVec != nil && *autoVec:
		if err := requireSite(c, site.ID, SiteAdminUp); err != nil {
			return nil, err
		}
		spec.Vectorize = true
	case autoVec == nil:
		spec.Vectorize = publish && s.automatic(c, site.TenantID)
	}
	if p := principal(c); p != nil {
		spec.Author = p.User.Name
	}
	return &importPlan{site: site, spec: spec, rejected: map[int]string{}}, nil
}

// generateFields are the document fields an import fills (enrich fields).
func generateFields(summary, tags bool) []string {
	var out []string
	if summary {
		out = append(out, enrich.FieldSummary)
	}
	if tags {
		out = append(out, enrich.FieldTags)
	}
	return out
}

// supported reports whether the plan's processor reads the file's type.
func (p *importPlan) supported(name string) bool {
	if p.spec.Processor == "" {
		return builtinFormats()[convert.Ext(name)]
	}
	for _, f := range processor.Formats {
		if f == convert.Ext(name) {
			return true
		}
	}
	return false
}

// builtinFormats is the set of extensions the built-in converters read,
// built once (concurrent imports read it).
var builtinFormats = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, f := range builtin.Registry().Formats() {
		m[f] = true
	}
	return m
})

// importFileName checks an uploaded or referenced file name: a plain name,
// never a path (traversal is refused, not silently cut).
func importFileName(raw string) (string, error) {
	name := strings.TrimSpace(raw)
	switch {
	case name == "":
		return "", BadRequest("files: a file has no name")
	case strings.ContainsAny(name, `/\`) || name == "." || name == "..":
		return "", BadRequest("files: %q is a path, not a file name", truncate(name, 80))
	case !utf8.ValidString(name) || utf8.RuneCountInString(name) > 255:
		return "", BadRequest("files: %q is not a valid UTF-8 name of at most 255 characters", truncate(name, 80))
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return "", BadRequest("files: the name %q contains control characters", truncate(name, 80))
		}
	}
	return name, nil
}

// importOptions reads the processor switches.
func importOptions(ocr bool, images, tables *bool) map[string]any {
	o := map[string]any{"ocr_enabled": ocr, "extract_images": true, "extract_tables": true}
	if images != nil {
		o["extract_images"] = *images
	}
	if tables != nil {
		o["extract_tables"] = *tables
	}
	return o
}

func formBool(v []string) (*bool, error) {
	if len(v) == 0 || strings.TrimSpace(v[0]) == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v[0]))
	if err != nil {
		return nil, err
	}
	return &b, nil
}

func formInt(values map[string][]string, name string) (int64, error) {
	v := strings.TrimSpace(firstValue(values[name]))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, Invalid("%s: a non-negative integer", name)
	}
	return n, nil
}

// rawFilename is the file name exactly as the client sent it: the
// multipart reader keeps only the last path element, which would let a name
// with traversal through silently instead of refusing it.
func rawFilename(fh *multipart.FileHeader) string {
	return rawPartName(fh.Header, fh.Filename)
}

// rawPartName is rawFilename for a part's header (fallback: the reader's
// name).
func rawPartName(h textproto.MIMEHeader, fallback string) string {
	if _, params, err := mime.ParseMediaType(h.Get("Content-Disposition")); err == nil {
		if name, ok := params["filename"]; ok {
			return name
		}
	}
	return fallback
}

func deref(b *bool) bool { return b != nil && *b }

// newImportID is the random part of an import's workflow id.
func newImportID() string { return workflows.ShortID(12) }

func safeExt(name string) string {
	ext := convert.Ext(name)
	for _, r := range ext {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return ""
		}
	}
	if ext == "" || len(ext) > 10 {
		return ""
	}
	return "." + ext
}

// unsupported is the reason a file of a type the plan's processor does not
// read fails.
func (s *Server) unsupported(p *importPlan, name string) string {
	formats := processor.Formats
	if p.spec.Processor == "" {
		formats = builtin.Registry().Formats()
	}
	return fmt.Sprintf("%s: %v: .%s (supported: %s)", name, convert.ErrUnsupported, convert.Ext(name), strings.Join(formats, ", "))
}

// startImport starts the import workflow and answers its task.
func (s *Server) startImport(c *fiber.Ctx, p *importPlan) (ImportTask, error) {
	for i, reason := range p.rejected {
		p.files[i].Reject = reason
	}
	in := workflows.ImportInput{ImportSpec: p.spec, Files: p.files, Concurrency: s.d.Cfg.ImportConcurrency,
		UploadPrefix: p.uploadDir}
	meta := workflows.JobMeta{Kind: JobImport, TenantID: p.site.TenantID, SiteID: p.site.ID,
		Title: workflows.JobTitle("Import", fmt.Sprintf("%d files", len(p.files)), p.site.Name)}
	if _, err := s.startJob(c, jobStart{id: p.spec.ImportID, meta: meta, wf: workflows.Import, input: in}); err != nil {
		return ImportTask{}, err
	}
	names := make([]string, len(p.files))
	for i, f := range p.files {
		names[i] = f.Name
	}
	now := time.Now().UTC()
	by := ""
	if pr := principal(c); pr != nil {
		by = pr.User.Name
	}
	proc := p.spec.Processor
	if proc == "" {
		proc = builtin.Name
	}
	return ImportTask{ID: p.spec.ImportID, JobID: p.spec.ImportID, TaskType: JobImport, Status: "pending",
		SiteID: p.site.ID, TenantID: p.site.TenantID, CreatedBy: by, CreatedAt: now, UpdatedAt: now,
		Payload: map[string]any{"files": names, "collection_id": p.spec.CollectionID, "processor": proc,
			"status": p.spec.Status, "vectorize": p.spec.Vectorize, "rejected": len(p.rejected), "generate": p.spec.Generate}}, nil
}
