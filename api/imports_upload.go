package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"os"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	"golang.org/x/sync/errgroup"
)

// maxFormValue is the longest non-file field of an import form (ids,
// booleans, a processor name).
const maxFormValue = 4 << 10

// importUpload is one documents:import body read part by part. Files that
// come after site_id (as every client we know sends them) go straight into
// the store under the import's folder, without a temporary file (see
// stream); files that come before it are spooled to temporary files first,
// as a parsed form would. Nothing is left behind when the request is
// refused.
type importUpload struct {
	s       *Server
	c       *fiber.Ctx
	store   blob.Store
	values  map[string][]string
	site    *models.Site    // set at the first file after site_id
	id      string          // the import's workflow id, once site is set
	dir     string          // the upload folder, once site is set
	files   []importPart    // in body order
	nvals   int             // bytes of form values read
	writers *errgroup.Group // writes of buffered files, uploadWriters at once
	pack    *bytes.Buffer   // small files not yet written (see addToPack)
	packKey string          // the object pack will be written to
	packN   int             // files in pack
	packs   int             // packs named so far
}

// importPart is one file part: stored under key, or spooled to a temporary file.
type importPart struct {
	name   string
	size   int64
	key    string // object written (streamed); "" when spooled or rejected
	offset int64  // where the file starts in key when packed
	packed bool   // key is a pack of several files (bytes offset..offset+size)
	spool  *os.File
	reject string // known while reading (over the import's per-file limit)
}

// importDocuments reads the multipart form, checks every file, stores the
// files under the site and starts the import job.
func (s *Server) importDocuments(c *fiber.Ctx) error {
	store, err := s.blobStore()
	if err != nil {
		return err
	}
	mr, err := s.multipartReader(c, "files")
	if err != nil {
		return err
	}
	u := &importUpload{s: s, c: c, store: store, values: map[string][]string{}, writers: new(errgroup.Group)}
	u.writers.SetLimit(uploadWriters)
	defer u.closeSpools()
	task, err := u.run(mr)
	if err != nil {
		_ = u.writers.Wait() // nothing may land after the clean-up
		if u.dir != "" {
			_ = store.DeletePrefix(c.UserContext(), u.dir)
		}
		return err
	}
	return created(c, task)
}

// run reads every part, plans the import, stores what was spooled, syncs
// and starts the workflow.
func (u *importUpload) run(mr *multipart.Reader) (ImportTask, error) {
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ImportTask{}, u.s.multipartError(u.c, "files", err)
		}
		err = u.part(part)
		_ = part.Close()
		if err != nil {
			return ImportTask{}, err
		}
	}
	u.flushPack()
	if err := u.writers.Wait(); err != nil {
		return ImportTask{}, u.s.blobError(u.c, err)
	}
	plan, err := u.plan()
	if err != nil {
		return ImportTask{}, err
	}
	if err := u.finish(plan); err != nil {
		return ImportTask{}, err
	}
	return u.s.startImport(u.c, plan)
}

// part reads one form field or file.
func (u *importUpload) part(p *multipart.Part) error {
	field := p.FormName()
	if p.FileName() == "" {
		v, err := io.ReadAll(io.LimitReader(p, maxFormValue+1))
		if err != nil {
			return u.s.multipartError(u.c, "files", err)
		}
		if len(v) > maxFormValue {
			return Invalid("%s: longer than %d bytes", truncate(field, 40), maxFormValue)
		}
		if u.nvals += len(v); u.nvals > multipartSlack {
			return Invalid("files: the form fields are longer than %d bytes", multipartSlack)
		}
		u.values[field] = append(u.values[field], string(v))
		return nil
	}
	if field != "files" && field != "file" {
		return nil // other file fields are ignored, as in a parsed form
	}
	if max := u.s.d.Cfg.ImportMaxFiles; len(u.files) >= max {
		return Invalid("files: at most %d files per import", max)
	}
	name, err := importFileName(rawPartName(p.Header, p.FileName()))
	if err != nil {
		return err
	}
	if u.site == nil && len(u.values["site_id"]) > 0 {
		if err := u.openSite(); err != nil {
			return err
		}
	}
	f := importPart{name: name}
	if u.site != nil {
		err = u.stream(&f, p)
	} else {
		err = u.spoolPart(&f, p)
	}
	if err != nil {
		return err
	}
	if f.size == 0 {
		return BadRequest("files: %q is empty", truncate(name, 80))
	}
	u.files = append(u.files, f)
	return nil
}

// openSite checks the site of the form (the first site_id wins, as in
// planImport) and names the import, so files can go straight to its folder.
func (u *importUpload) openSite() error {
	siteID, err := formInt(u.values, "site_id")
	if err != nil {
		return err
	}
	if siteID < 1 {
		return Invalid("site_id: required")
	}
	if u.site, err = u.s.bodySite(u.c, siteID, EditorUp); err != nil {
		return err
	}
	u.name()
	return nil
}

// name gives the import its workflow id and upload folder, once its site is known.
func (u *importUpload) name() {
	u.id = workflows.ImportID(u.site.ID, newImportID())
	u.dir = fmt.Sprintf("sites/%d/imports/%s/src/", u.site.ID, u.id)
}

// capReader counts what it reads and fails with errOverFile once more than
// max bytes came, so an oversized file is never stored whole.
type capReader struct {
	r      io.Reader
	n, max int64
	err    error // the underlying reader's error (not io.EOF)
}

var errOverFile = errors.New("file over the import limit")

func (c *capReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	if c.n > c.max {
		return n, errOverFile
	}
	return n, err
}

// uploadBuffer is the largest file part read into memory and handed to a
// writer; larger ones are streamed into the store by the request itself.
const uploadBuffer = 1 << 20

// stream stores one file part under the import's folder: a part of at most
// uploadBuffer bytes is read into memory and written by one of the
// uploadWriters (so the stores' fsyncs overlap with reading the body), in a
// pack with other small files when the built-in converters read its type
// (see addToPack); a larger one is streamed by the request. A file over LORE_IMPORT_MAX_BYTES
// is read to its end, not stored, and fails alone.
func (u *importUpload) stream(f *importPart, p *multipart.Part) error {
	key := u.dir + strconv.Itoa(len(u.files)) + safeExt(f.name)
	limit := u.s.d.Cfg.ImportMaxBytes
	head, err := io.ReadAll(io.LimitReader(p, min(limit, uploadBuffer)+1))
	if err != nil {
		return u.s.multipartError(u.c, "files", err)
	}
	meta := map[string]string{blob.MetaOriginalFilename: f.name}
	if n := int64(len(head)); n <= min(limit, uploadBuffer) {
		f.size = n
		if builtinFormats()[convert.Ext(f.name)] {
			u.addToPack(f, head)
			return nil
		}
		f.key = key
		u.write(key, head, meta)
		return nil
	}
	cr := &capReader{r: io.MultiReader(bytes.NewReader(head), p), max: limit}
	_, err = u.store.Put(u.c.UserContext(), key, cr, -1, blob.DefaultContentType, meta)
	switch {
	case cr.err != nil:
		return u.s.multipartError(u.c, "files", cr.err)
	case cr.n > cr.max:
		rest, err := io.Copy(io.Discard, p)
		if err != nil {
			return u.s.multipartError(u.c, "files", err)
		}
		f.size = cr.n + rest
		f.reject = fmt.Sprintf("%s: %v: %d bytes, the limit is %d", f.name, convert.ErrTooLarge, f.size, cr.max)
		return nil
	case err != nil:
		return u.s.blobError(u.c, err)
	}
	f.size, f.key = cr.n, key
	return nil
}

// Packs: small files of a type the built-in converters read are written
// to the store several at once, as one object ("pack-N" in the upload
// folder, the files' bytes one after another), so an import of many small
// files costs a few store writes (each a temporary file, a sidecar, two
// fsyncs and two renames on the local store; a request on S3) instead of
// one per file. A file of another type is written alone, so a file the
// plan rejects (an unsupported type) can be deleted before the import
// starts; a packed file that the plan rejects stays in its pack until the
// upload folder is removed.
const (
	packFiles = 16      // files per pack at most
	packBytes = 1 << 20 // a pack is written once it holds this much
)

// addToPack appends a buffered file to the current pack and writes the pack
// once it is full.
func (u *importUpload) addToPack(f *importPart, data []byte) {
	if u.pack == nil {
		u.pack = new(bytes.Buffer)
		u.packKey = u.dir + "pack-" + strconv.Itoa(u.packs)
		u.packs++
	}
	f.key, f.offset, f.packed = u.packKey, int64(u.pack.Len()), true
	u.pack.Write(data)
	if u.packN++; u.packN >= packFiles || u.pack.Len() >= packBytes {
		u.flushPack()
	}
}

// flushPack hands the current pack, if any, to a writer.
func (u *importUpload) flushPack() {
	if u.pack == nil {
		return
	}
	u.write(u.packKey, u.pack.Bytes(), nil)
	u.pack, u.packKey, u.packN = nil, "", 0
}

// write stores data under key on one of the uploadWriters.
func (u *importUpload) write(key string, data []byte, meta map[string]string) {
	ctx := u.c.UserContext() // the writer must not touch the fiber.Ctx
	u.writers.Go(func() error {
		_, err := u.store.Put(ctx, key, bytes.NewReader(data), int64(len(data)), blob.DefaultContentType, meta)
		return err
	})
}

// uploadWriters is how many buffered files are written to the store at
// once: each write waits mostly on the store (a sync to disk, a request to
// S3), so several overlap instead of adding up.
const uploadWriters = 8

// spoolPart copies a file that came before site_id to a temporary file.
func (u *importUpload) spoolPart(f *importPart, p *multipart.Part) error {
	tmp, err := os.CreateTemp("", "lore-import-*")
	if err != nil {
		return fmt.Errorf("spool upload: %w", err)
	}
	_ = os.Remove(tmp.Name()) // unlinked: gone with the handle whatever happens
	f.spool = tmp
	if f.size, err = io.Copy(tmp, p); err != nil {
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			return fmt.Errorf("spool upload: %w", err)
		}
		return u.s.multipartError(u.c, "files", err)
	}
	return nil
}

func (u *importUpload) closeSpools() {
	for _, f := range u.files {
		if f.spool != nil {
			_ = f.spool.Close()
		}
	}
}

// plan validates the whole form as the parsed form was: fields, at least one
// file, then site, collection, processor and vectorize choice.
func (u *importUpload) plan() (*importPlan, error) {
	v := u.values
	siteID, err := formInt(v, "site_id")
	if err != nil {
		return nil, err
	}
	colID, err := formInt(v, "collection_id")
	if err != nil {
		return nil, err
	}
	bools := map[string]*bool{}
	for _, k := range []string{"publish", "auto_vectorize", "ocr_enabled", "extract_images", "extract_tables", "generate_summary", "generate_tags"} {
		if bools[k], err = formBool(v[k]); err != nil {
			return nil, Invalid("%s: true or false", k)
		}
	}
	if len(u.files) == 0 {
		return nil, Invalid("files: at least one file is required")
	}
	proc := firstValue(v["processor_type"])
	if proc == "" {
		proc = firstValue(v["processor"])
	}
	plan, err := u.s.planImport(u.c, siteID, colID, proc, deref(bools["publish"]), bools["auto_vectorize"],
		importOptions(deref(bools["ocr_enabled"]), bools["extract_images"], bools["extract_tables"]))
	if err != nil {
		return nil, err
	}
	plan.spec.Generate = generateFields(deref(bools["generate_summary"]), deref(bools["generate_tags"]))
	if _, err := u.s.temporalClient(); err != nil {
		return nil, err
	}
	if u.site == nil {
		u.site = plan.site
		u.name()
	}
	plan.spec.ImportID, plan.uploadDir = u.id, u.dir
	return plan, nil
}

// finish decides each file against the plan (unsupported types and files
// over the limit fail alone; a streamed file of such a type is deleted) and
// stores the spooled files.
func (u *importUpload) finish(plan *importPlan) error {
	ctx := u.c.UserContext()
	for i := range u.files {
		f := &u.files[i]
		in := activities.ImportFile{Name: f.name, Source: activities.SourceUpload, Size: f.size}
		switch {
		case !plan.supported(f.name):
			plan.rejected[i] = u.s.unsupported(plan, f.name)
		case f.reject != "":
			plan.rejected[i] = f.reject
		case f.size > plan.spec.MaxBytes:
			plan.rejected[i] = fmt.Sprintf("%s: %v: %d bytes, the limit is %d", f.name, convert.ErrTooLarge, f.size, plan.spec.MaxBytes)
		case f.spool != nil:
			in.Key = u.dir + strconv.Itoa(i) + safeExt(f.name)
			if err := u.putSpool(in.Key, f); err != nil {
				return err
			}
		case f.packed:
			in.Key, in.Offset, in.Length = f.key, f.offset, f.size
		default:
			in.Key = f.key
		}
		if in.Key == "" && f.key != "" && !f.packed {
			if err := u.store.Delete(ctx, f.key); err != nil && !errors.Is(err, blob.ErrNotFound) {
				return u.s.blobError(u.c, err)
			}
		}
		plan.files = append(plan.files, in)
	}
	return nil
}

// putSpool writes a spooled file into the store.
func (u *importUpload) putSpool(key string, f *importPart) error {
	if _, err := f.spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spool upload: %w", err)
	}
	meta := map[string]string{blob.MetaOriginalFilename: f.name}
	if _, err := u.store.Put(u.c.UserContext(), key, f.spool, f.size, blob.DefaultContentType, meta); err != nil {
		return u.s.blobError(u.c, err)
	}
	return nil
}
