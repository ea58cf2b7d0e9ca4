package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/lorekb/lore/activities"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// TestImportOneBadFileFailsAlone: a file whose activity fails for good, one
// the API rejected and one whose activity fails once and is retried all end
// as they should while the others complete; the created documents are
// indexed in one group and the uploads of an import with failures are kept.
func TestImportOneBadFileFailsAlone(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
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
	env.ExecuteWorkflow(Import, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var p BatchProgress
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
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
