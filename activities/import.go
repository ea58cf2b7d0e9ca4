package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/builtin"
	"github.com/lorekb/lore/internal/convert/processor"
	_ "github.com/lorekb/lore/internal/convert/processor/drivers" // external processors an import may name
	"github.com/lorekb/lore/internal/datasource"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Import holds the import activities.
type Import struct {
	DB     ImportStore
	Blob   blob.Store // nil: no object store (uploads and images are refused or skipped)
	Models TenantModels
	// Outbound is the transport to external document processors (see
	// deps.Outbound).
	Outbound func() http.RoundTripper
	// PublicURL is Lore's public address (LORE_PUBLIC_URL), the base of the
	// links to extracted images.
	PublicURL string
	// Sources opens the files of a data source (deps.DataSource).
	Sources func(ctx context.Context, ds *models.DataSource) (datasource.Source, error)
	// Processors builds the converter of a configured external processor.
	Processors func(c processor.Config) (convert.Converter, error)
	// FileTimeout is the time one file's built-in conversion may take
	// (0: convert.DefaultLimits.Timeout); past it the file fails alone,
	// without a retry.
	FileTimeout time.Duration
}

// ImportStore is the database of an import: the documents it created (by
// import id and file index, so a retry finds them), its data sources and the
// tenant's processor configuration.
type ImportStore interface {
	ImportedDocument(ctx context.Context, importID string, index int) (int64, bool, error)
	CreateImportedDocument(ctx context.Context, importID string, index int, doc *models.Document) (int64, bool, error)
	ImportedDocuments(ctx context.Context, importID string, indexes []int) (map[int]db.ImportedDoc, error)
	CreateImportedDocuments(ctx context.Context, importID string, docs []db.NewImportedDoc) ([]bool, error)
	GetDataSource(ctx context.Context, id int64) (*models.DataSource, error)
	GetSystemConfig(ctx context.Context, tenantID int64, key string) (*models.SystemConfig, error)
}

// processorTimeout is the conversion budget of a file sent to an external
// processor: its HTTP client's own limit, and some.
const processorTimeout = 12 * time.Minute

// fetchSlack is what a file's fetch, image writes and row may take beyond
// its conversion before its activity counts it as stuck.
const fetchSlack = 10 * time.Minute

// fileTimeout is the conversion budget of one file converted by conv.
func (a *Import) fileTimeout(conv convert.Converter) time.Duration {
	t := a.FileTimeout
	if t <= 0 {
		t = convert.DefaultLimits.Timeout
	}
	if _, ok := conv.(registryConverter); !ok {
		t = max(t, processorTimeout)
	}
	return t
}

// builtinConverters is built once; the registry is read-only.
var builtinConverters = sync.OnceValue(builtin.Registry)

// Where an import file comes from.
const (
	SourceUpload     = "upload"     // an object of Lore's store, uploaded with the request
	SourceDataSource = "datasource" // a key of a data source
)

// ImportSpec is what every file of one import shares.
type ImportSpec struct {
	ImportID     string // the workflow id; with the file index it keys the created document
	TenantID     int64
	SiteID       int64
	CollectionID *int64
	Status       string // draft | published
	Vectorize    bool   // mark documents pending; the workflow indexes them
	Processor    string // "" or "builtin", else an external processor's id, name or type
	Options      map[string]any
	Author       string
	MaxBytes     int64
	// Generate names the document fields (summary, tags) filled from the
	// converted content as documents:aiGenerate fills them.
	Generate []string `json:",omitempty"`
}

// ImportFile is one file of an import.
type ImportFile struct {
	Name         string // the original file name: format and last-resort title
	Source       string
	DataSourceID int64
	Key          string
	// Reject is why the file fails without being fetched (a type no
	// converter reads, a size over the limit), decided by the API.
	Reject string `json:",omitempty"`
	// Size is the file's size in bytes when the API knows it (uploads): the
	// workflow bounds the bytes of one batch with it.
	Size int64 `json:",omitempty"`
	// Length, when set, says the file is Length bytes of the object Key
	// starting at Offset (an upload packed with other small files); else
	// the file is the whole object.
	Offset int64 `json:",omitempty"`
	Length int64 `json:",omitempty"`
}

// ImportFileInput is the input of ImportFile.
type ImportFileInput struct {
	Spec  ImportSpec
	Index int
	File  ImportFile
}

// ImportFileResult reports one imported file.
type ImportFileResult struct {
	DocumentID int64
	Title      string
	Created    bool // false: a previous attempt had created it
	Images     int
}

func fileFailure(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrImportFile, nil)
}

// ImportFile fetches one file, converts it to Markdown, stores its images and
// creates its document. A retry finds the document of an earlier attempt (by
// import id and file index) and creates nothing. Imports started before
// ImportBatch still run it.
func (a *Import) ImportFile(ctx context.Context, in ImportFileInput) (ImportFileResult, error) {
	if id, ok, err := a.DB.ImportedDocument(ctx, in.Spec.ImportID, in.Index); err != nil {
		return ImportFileResult{}, err
	} else if ok {
		return ImportFileResult{DocumentID: id}, nil
	}
	conv, err := a.converter(ctx, in.Spec)
	if err != nil {
		return ImportFileResult{}, err
	}
	live := newLiveness(a.fileTimeout(conv) + fetchSlack)
	stop := heartbeatEvery(ctx, 5*time.Second, live.stuck)
	defer stop()
	done := live.begin()
	doc, images, err := a.prepare(ctx, conv, in)
	done()
	if err != nil {
		return ImportFileResult{}, err
	}
	id, created, err := a.DB.CreateImportedDocument(ctx, in.Spec.ImportID, in.Index, doc)
	if errors.Is(err, db.ErrCollectionNotInSite) || errors.Is(err, db.ErrNotFound) {
		return ImportFileResult{}, fileFailure("%s: the collection is gone or belongs to another site", in.File.Name)
	}
	if err != nil {
		return ImportFileResult{}, err
	}
	return ImportFileResult{DocumentID: id, Title: doc.Title, Created: created, Images: images}, nil
}

// prepare fetches and converts one file, stores its images and builds its
// document row (not yet written).
func (a *Import) prepare(ctx context.Context, conv convert.Converter, in ImportFileInput) (*models.Document, int, error) {
	data, err := a.fetch(ctx, in)
	if err != nil {
		return nil, 0, err
	}
	return a.prepareData(ctx, conv, in, data)
}

// prepareData converts a file's fetched bytes, stores its images and builds
// its document row (not yet written): the import's path, which a sync takes
// too with the bytes it read from its source.
func (a *Import) prepareData(ctx context.Context, conv convert.Converter, in ImportFileInput, data []byte) (*models.Document, int, error) {
	res, err := a.convertFile(ctx, conv, in, data)
	if err != nil {
		return nil, 0, err
	}
	md, err := a.storeImages(ctx, in, res)
	if err != nil {
		return nil, 0, err
	}
	res.Meta["source_name"] = in.File.Name
	res.Meta["import_id"] = in.Spec.ImportID
	summary, tags := a.generate(ctx, in.Spec, md, res.Meta)
	mb, _ := json.Marshal(res.Meta)
	meta := string(mb)
	doc := &models.Document{TenantID: in.Spec.TenantID, SiteID: in.Spec.SiteID, CollectionID: in.Spec.CollectionID,
		Title: res.Title, Content: md, Author: in.Spec.Author, Summary: summary, Tags: tags, Status: in.Spec.Status,
		VectorStatus: models.VecNone, ContentVersion: 1, ReadingTime: analyze.ReadingTime(md), ParseMeta: &meta}
	if in.Spec.Vectorize {
		doc.VectorStatus = models.VecPending
	}
	return doc, len(res.Images), nil
}

// convertFile converts one fetched file within its budget: a file that
// cannot be converted, or takes longer than its budget, fails alone and is
// not retried; a cancelled activity returns its context's error.
func (a *Import) convertFile(ctx context.Context, conv convert.Converter, in ImportFileInput, data []byte) (*convert.Result, error) {
	input := convert.Input{Name: in.File.Name, Data: data, Options: in.Spec.Options,
		Limits: convert.Limits{MaxBytes: in.Spec.MaxBytes, Timeout: a.fileTimeout(conv)}}
	var res *convert.Result
	var err error
	if r, ok := conv.(registryConverter); ok {
		res, err = r.r.Convert(ctx, input) // the registry runs convert.Run with the file's own converter: once, not twice
	} else {
		res, err = convert.Run(ctx, conv, input)
	}
	if err != nil {
		if convert.Permanent(err) {
			return nil, fileFailure("%s: %v", in.File.Name, err)
		}
		return nil, fmt.Errorf("%s: %w", in.File.Name, err)
	}
	return res, nil
}

// heartbeatEvery heartbeats until stopped, so a worker that dies is noticed
// within the heartbeat timeout while a long conversion keeps its attempt,
// and so a cancellation reaches ctx (Temporal delivers it with a
// heartbeat's answer). It skips the beats while stuck() says some file has
// run past its budget: the attempt then times out instead of being kept
// alive by work that no longer progresses.
func heartbeatEvery(ctx context.Context, d time.Duration, stuck func() bool) func() {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if stuck == nil || !stuck() {
					activity.RecordHeartbeat(ctx)
				}
			}
		}
	}()
	return func() { close(done) }
}

// liveness tracks the files an activity is working on, to tell a slow
// batch from a stuck one.
type liveness struct {
	limit time.Duration
	mu    sync.Mutex
	next  int
	since map[int]time.Time // file in flight → when it started
}

func newLiveness(limit time.Duration) *liveness {
	return &liveness{limit: limit, since: map[int]time.Time{}}
}

// begin records a file in flight; the returned func ends it.
func (l *liveness) begin() func() {
	l.mu.Lock()
	id := l.next
	l.next++
	l.since[id] = time.Now()
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.since, id)
		l.mu.Unlock()
	}
}

// stuck reports whether a file has been in flight longer than the limit.
func (l *liveness) stuck() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.since {
		if time.Since(t) > l.limit {
			return true
		}
	}
	return false
}

// fetch reads the file (at most MaxBytes, or it fails as too large).
func (a *Import) fetch(ctx context.Context, in ImportFileInput) ([]byte, error) {
	var rc io.ReadCloser
	var err error
	switch in.File.Source {
	case SourceUpload:
		if a.Blob == nil {
			return nil, errors.New("no object store configured")
		}
		rc, _, err = a.Blob.Get(ctx, in.File.Key)
	case SourceDataSource:
		ds, derr := a.DB.GetDataSource(ctx, in.File.DataSourceID)
		if errors.Is(derr, db.ErrNotFound) || (derr == nil && ds.TenantID != in.Spec.TenantID) {
			return nil, fileFailure("%s: data source %d no longer exists", in.File.Name, in.File.DataSourceID)
		}
		if derr != nil {
			return nil, derr
		}
		src, serr := a.Sources(ctx, ds)
		if serr != nil {
			return nil, fileFailure("%s: data source %d cannot be opened: %v", in.File.Name, ds.ID, serr)
		}
		rc, _, err = src.Get(ctx, in.File.Key)
	default:
		return nil, fileFailure("%s: unknown source %q", in.File.Name, in.File.Source)
	}
	if errors.Is(err, blob.ErrNotFound) {
		return nil, fileFailure("%s: the file is no longer in the store", in.File.Name)
	}
	if errors.Is(err, datasource.ErrInvalidKey) || errors.Is(err, blob.ErrInvalidName) {
		return nil, fileFailure("%s: %v", in.File.Name, err)
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	limit := in.Spec.MaxBytes
	if limit <= 0 {
		limit = convert.DefaultLimits.MaxBytes
	}
	if in.File.Length > 0 {
		return readRange(rc, in.File, limit)
	}
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fileFailure("%s: %v: more than %d bytes", in.File.Name, convert.ErrTooLarge, limit)
	}
	return data, nil
}

// readRange reads a packed file: Length bytes from Offset.
func readRange(rc io.Reader, f ImportFile, limit int64) ([]byte, error) {
	if f.Length > limit {
		return nil, fileFailure("%s: %v: more than %d bytes", f.Name, convert.ErrTooLarge, limit)
	}
	var err error
	if s, ok := rc.(io.Seeker); ok {
		_, err = s.Seek(f.Offset, io.SeekStart)
	} else {
		_, err = io.CopyN(io.Discard, rc, f.Offset)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	data := make([]byte, f.Length)
	if _, err := io.ReadFull(rc, data); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fileFailure("%s: the stored upload is shorter than the file", f.Name)
	} else if err != nil {
		return nil, err
	}
	return data, nil
}

// converter is the built-in registry or the named external processor.
func (a *Import) converter(ctx context.Context, spec ImportSpec) (convert.Converter, error) {
	if spec.Processor == "" || spec.Processor == builtin.Name {
		return registryConverter{builtinConverters()}, nil
	}
	row, err := a.DB.GetSystemConfig(ctx, spec.TenantID, processor.ConfigKey)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return nil, err
	}
	raw := ""
	if row != nil {
		raw = row.Value
	}
	doc, err := processor.Parse(raw)
	if err != nil {
		return nil, fileFailure("the doc-processor config cannot be read: %v", err)
	}
	cfg, ok := doc.Find(spec.Processor)
	if !ok {
		return nil, fileFailure("document processor %q is not configured or not enabled", spec.Processor)
	}
	if a.Processors == nil {
		// A redirect is not followed: the request carries the processor's
		// key, and its target is the processor's to name in base_url.
		return processor.New(cfg, &http.Client{Timeout: 10 * time.Minute, Transport: a.Outbound(),
			CheckRedirect: func(req *http.Request, _ []*http.Request) error {
				return fmt.Errorf("the document processor redirected to %s: redirects are not followed; set its base_url to the address that answers", req.URL.Redacted())
			}})
	}
	return a.Processors(cfg)
}

// registryConverter lets the registry stand where one converter is wanted.
type registryConverter struct{ r *convert.Registry }

func (r registryConverter) Name() string      { return builtin.Name }
func (r registryConverter) Formats() []string { return r.r.Formats() }
func (r registryConverter) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	return r.r.Convert(ctx, in)
}

// storeImages puts the extracted images under the site
// (sites/<site>/imports/<import>/<file>/<name>, so a retry overwrites them
// and deleting the site removes them) and rewrites their links to the
// public file route.
func (a *Import) storeImages(ctx context.Context, in ImportFileInput, res *convert.Result) (string, error) {
	if len(res.Images) == 0 || a.Blob == nil {
		return convert.RewriteImages(res.Markdown, nil), nil
	}
	urls := map[string]string{}
	base := strings.TrimRight(a.PublicURL, "/")
	for _, img := range res.Images {
		name := fmt.Sprintf("sites/%d/imports/%s/%d/%s", in.Spec.SiteID, in.Spec.ImportID, in.Index, img.Name)
		ct := img.ContentType
		if ct == "" {
			ct = mime.TypeByExtension(path.Ext(img.Name))
		}
		if _, err := a.Blob.Put(ctx, name, strings.NewReader(string(img.Data)), int64(len(img.Data)), ct, nil); err != nil {
			return "", fmt.Errorf("store image %s: %w", img.Name, err)
		}
		urls[img.Name] = base + "/v1/files/" + (&url.URL{Path: name}).EscapedPath() + ":download"
	}
	return convert.RewriteImages(res.Markdown, urls), nil
}

// RemoveUploads deletes the uploaded source files of a finished import.
func (a *Import) RemoveUploads(ctx context.Context, prefix string) error {
	if a.Blob == nil || !strings.HasPrefix(prefix, "sites/") || !strings.HasSuffix(prefix, "/") {
		return nil
	}
	return a.Blob.DeletePrefix(ctx, prefix)
}
