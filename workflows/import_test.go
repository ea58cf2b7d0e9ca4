package workflows

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lorekb/lore/activities"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// TestImportOneBadFileFailsAlone: in an import started before batches (one
// ImportFile activity per file), a file whose activity fails for good, one
// the API rejected and one whose activity fails once and is retried all end
// as they should while the others complete; the created documents are
// indexed in one group and the uploads of an import with failures are kept.
func TestImportOneBadFileFailsAlone(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.OnGetVersion("import-batches", workflow.DefaultVersion, importVersionWaves).Return(workflow.DefaultVersion)
	var imp *activities.Import
	var vec *activities.Vectorize
	env.RegisterActivity(imp)
	env.RegisterActivity(vec)
	attempts := map[int]int{}
	env.OnActivity(imp.ImportFile, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ImportFileInput) (activities.ImportFileResult, error) {
			attempts[in.Index]++
			switch {
			case in.File.Name == "locked.pdf":
				return activities.ImportFileResult{}, temporal.NewNonRetryableApplicationError("locked.pdf: the file is encrypted", activities.ErrImportFile, nil)
			case in.File.Name == "flaky.md" && attempts[in.Index] == 1:
				return activities.ImportFileResult{}, errors.New("worker lost")
			}
			return activities.ImportFileResult{DocumentID: int64(100 + in.Index), Title: in.File.Name, Created: true}, nil
		})
	var indexed []int64
	env.OnActivity(vec.IndexDocuments, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, g activities.DocGroup) (activities.GroupResult, error) {
			indexed = append(indexed, g.DocumentIDs...)
			return activities.GroupResult{Completed: g.DocumentIDs}, nil
		})
	removed := false
	env.OnActivity(imp.RemoveUploads, mock.Anything, mock.Anything).Return(func(ctx context.Context, p string) error {
		removed = true
		return nil
	})
	in := ImportInput{ImportSpec: activities.ImportSpec{ImportID: "import-1-x", SiteID: 1, Vectorize: true}, Concurrency: 2,
		UploadPrefix: "sites/1/imports/import-1-x/src/",
		Files: []activities.ImportFile{{Name: "a.md"}, {Name: "locked.pdf"}, {Name: "b.zip", Reject: "b.zip: unsupported file type"},
			{Name: "flaky.md"}, {Name: "c.docx"}}}
	p := runImport(t, env, in)
	if !p.Done || p.Total != 5 || p.Completed != 3 || p.Failed != 2 || p.Running != 0 || p.Pending != 0 {
		t.Fatalf("progress %+v", p)
	}
	want := []struct{ status, reason string }{{"completed", ""}, {"failed", "locked.pdf: the file is encrypted"},
		{"failed", "b.zip: unsupported file type"}, {"completed", ""}, {"completed", ""}}
	for i, w := range want {
		it := p.Items[i]
		if it.Status != w.status || it.Reason != w.reason || it.Index != i || it.Name != in.Files[i].Name {
			t.Fatalf("item %d: %+v, want %+v", i, it, w)
		}
		if w.status == "completed" && (it.DocumentID != int64(100+i) || it.VectorStatus != "completed") {
			t.Fatalf("item %d: %+v", i, it)
		}
	}
	if attempts[1] != 1 || attempts[3] != 2 || attempts[2] != 0 {
		t.Fatalf("attempts %v: the encrypted file is not retried, the flaky one is, the rejected one never runs", attempts)
	}
	if len(indexed) != 3 {
		t.Fatalf("indexed %v", indexed)
	}
	if removed {
		t.Fatal("uploads removed although files failed (a job retry needs them)")
	}
}

// TestImportBatchesOneBadFileFailsAlone: the batched import (the current
// version) cuts the files into ImportBatch activities; a file the batch
// reports failed fails alone with its reason, a rejected file never runs, a
// batch whose first attempt fails after writing some documents is retried
// and the retry does not create a second document for a file (the fake
// keeps the documents by import and index as the database does), and every
// created document is indexed once.
func TestImportBatchesOneBadFileFailsAlone(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var imp *activities.Import
	var vec *activities.Vectorize
	env.RegisterActivity(imp)
	env.RegisterActivity(vec)
	created := map[int]int64{} // index → document, as import_items keeps them
	creations := map[int]int{}
	attempts, failedOnce := 0, false
	var batches [][]int
	nextID := int64(100)
	var mu sync.Mutex // the environment runs activities concurrently
	env.OnActivity(imp.ImportBatch, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ImportBatchInput) (activities.ImportBatchResult, error) {
			mu.Lock()
			defer mu.Unlock()
			attempts++
			var idx []int
			var out activities.ImportBatchResult
			flaky := false
			for _, f := range in.Files {
				idx = append(idx, f.Index)
				it := activities.ImportBatchItem{Index: f.Index}
				switch id, ok := created[f.Index]; {
				case ok:
					it.DocumentID, it.Title = id, f.File.Name
				case f.File.Name == "locked.pdf":
					it.Reason = "locked.pdf: the file is encrypted"
				case f.File.Name == "flaky.md" && !failedOnce:
					flaky, failedOnce = true, true // fails once, after the others of its batch were written
					continue
				default:
					nextID++
					created[f.Index] = nextID
					creations[f.Index]++
					it.DocumentID, it.Title, it.Created = nextID, f.File.Name, true
				}
				out.Items = append(out.Items, it)
			}
			batches = append(batches, idx)
			if flaky {
				return activities.ImportBatchResult{}, errors.New("processor unavailable")
			}
			if in.MaxAttempts != importAttempts {
				return activities.ImportBatchResult{}, temporal.NewNonRetryableApplicationError("MaxAttempts not passed", "test", nil)
			}
			return out, nil
		})
	var indexed []int64
	env.OnActivity(vec.IndexDocuments, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, g activities.DocGroup) (activities.GroupResult, error) {
			mu.Lock()
			defer mu.Unlock()
			indexed = append(indexed, g.DocumentIDs...)
			return activities.GroupResult{Completed: g.DocumentIDs}, nil
		})
	env.OnActivity(imp.RemoveUploads, mock.Anything, mock.Anything).Return(nil)
	files := []activities.ImportFile{{Name: "a.md"}, {Name: "locked.pdf"}, {Name: "b.zip", Reject: "b.zip: unsupported file type"},
		{Name: "flaky.md"}, {Name: "c.docx"}}
	for i := 0; i < 40; i++ {
		files = append(files, activities.ImportFile{Name: fmt.Sprintf("more-%d.md", i)})
	}
	in := ImportInput{ImportSpec: activities.ImportSpec{ImportID: "import-1-y", SiteID: 1, Vectorize: true}, Concurrency: 2, Files: files}
	p := runImport(t, env, in)
	if !p.Done || p.Total != 45 || p.Completed != 43 || p.Failed != 2 || p.Running != 0 || p.Pending != 0 {
		t.Fatalf("progress %+v", p)
	}
	for i, it := range p.Items {
		switch i {
		case 1:
			if it.Status != ItemFailed || it.Reason != "locked.pdf: the file is encrypted" {
				t.Fatalf("item 1: %+v", it)
			}
		case 2:
			if it.Status != ItemFailed || it.Reason != "b.zip: unsupported file type" {
				t.Fatalf("item 2: %+v", it)
			}
		default:
			if it.Status != ItemCompleted || it.DocumentID != created[i] || it.Title != files[i].Name || it.VectorStatus != "completed" {
				t.Fatalf("item %d: %+v (document %d)", i, it, created[i])
			}
		}
	}
	for i, n := range creations {
		if n != 1 {
			t.Fatalf("file %d: %d documents created, want exactly 1", i, n)
		}
	}
	// 44 accepted files, 2 at once: two batches per slot (four of 11
	// files), two attempts of the flaky file's batch, the rejected file in
	// none.
	seen := map[int]int{}
	for _, b := range batches {
		if len(b) != 11 {
			t.Fatalf("batch of %d files", len(b))
		}
		for _, i := range b {
			seen[i]++
		}
	}
	if len(batches) != 5 || seen[2] != 0 || seen[3] != 2 || seen[0] != 2 || seen[20] != 1 {
		t.Fatalf("batches %v", batches)
	}
	if len(indexed) != 43 {
		t.Fatalf("indexed %d documents, want 43", len(indexed))
	}
}

// TestImportBatchesBounds: batches share the files evenly (over the
// concurrency in version importVersionBatches, over twice the concurrency
// since importVersionWaves), hold at most the version's files and
// importBatchBytes bytes (a larger file alone), and keep the files' order.
func TestImportBatchesBounds(t *testing.T) {
	mk := func(sizes ...int64) []activities.ImportBatchFile {
		var out []activities.ImportBatchFile
		for i, s := range sizes {
			out = append(out, activities.ImportBatchFile{Index: i, File: activities.ImportFile{Size: s}})
		}
		return out
	}
	lens := func(bs [][]activities.ImportBatchFile) []int {
		var out []int
		next := 0
		for _, b := range bs {
			out = append(out, len(b))
			for _, f := range b {
				if f.Index != next {
					t.Fatalf("order broken: %d, want %d", f.Index, next)
				}
				next++
			}
		}
		return out
	}
	cases := []struct {
		files, share, max int
		want              string
	}{
		{10, 4, importBatchFiles, "[3 3 3 1]"},                 // version 1, 4 at once
		{100, 2, importBatchFiles, "[16 16 16 16 16 16 4]"},    // version 1, 2 at once
		{10, 8, importWaveFiles, "[2 2 2 2 2]"},                // two waves, 4 at once
		{128, 8, importWaveFiles, "[16 16 16 16 16 16 16 16]"}, // two waves, 4 at once
		{256, 8, importWaveFiles, "[32 32 32 32 32 32 32 32]"}, // two waves, 4 at once
		{200, 2, importWaveFiles, "[32 32 32 32 32 32 8]"},     // two waves, 1 at once
	}
	for _, c := range cases {
		if got := lens(importBatches(mk(make([]int64, c.files)...), c.share, c.max)); fmt.Sprint(got) != c.want {
			t.Fatalf("%d files shared by %d, at most %d: %v, want %s", c.files, c.share, c.max, got, c.want)
		}
	}
	big := int64(importBatchBytes/2 + 1)
	if got := lens(importBatches(mk(1, big, big, importBatchBytes*2, 1), 1, importWaveFiles)); fmt.Sprint(got) != "[2 1 1 1]" {
		t.Fatalf("sizes: %v", got)
	}
	if got := importBatches(nil, 4, importWaveFiles); got != nil {
		t.Fatalf("no files: %v", got)
	}
}

// runImport runs the import workflow to its end and returns its progress.
func runImport(t *testing.T, env *testsuite.TestWorkflowEnvironment, in ImportInput) BatchProgress {
	t.Helper()
	env.ExecuteWorkflow(Import, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var p BatchProgress
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	return p
}
