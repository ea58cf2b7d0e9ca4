package workflows

import (
	"time"

	"github.com/lorekb/lore/activities"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// StepImporting is the step of an import while it converts files.
const StepImporting = "importing files"

// Item states of an import.
const (
	ItemPending   = "pending"
	ItemRunning   = "running"
	ItemCompleted = "completed"
	ItemFailed    = "failed"
)

// ItemResult is the state of one file of an import, in the order the files
// were given.
type ItemResult struct {
	Index        int    `json:"index"`
	Name         string `json:"name"`
	Status       string `json:"status" enum:"pending,running,completed,failed"`
	DocumentID   int64  `json:"document_id,omitempty"`
	Title        string `json:"title,omitempty"`
	Reason       string `json:"reason,omitempty"`
	VectorStatus string `json:"vector_status,omitempty" doc:"completed or failed once the import vectorized the document"`
}

// ImportInput is one import request: what the files share and the files.
type ImportInput struct {
	activities.ImportSpec
	Files       []activities.ImportFile
	Concurrency int // files converted at once
	// UploadPrefix is the folder of the uploaded source files, removed when
	// every file was imported ("" keeps them); after a failure they stay so
	// a retry of the job can try the failed files again.
	UploadPrefix string
}

// importAttempts is how often a file's (or a batch's) activity is tried.
const importAttempts = 5

// importOptions retry a file's activity on transient failures (a worker
// that died, a processor that is down); a file that cannot be converted
// fails at once with a non-retryable error. The heartbeat timeout lets a
// killed worker's files move to another worker within seconds.
var importOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Minute,
	HeartbeatTimeout:    15 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
		MaximumInterval: 30 * time.Second, MaximumAttempts: importAttempts},
}

// importBatchOptions are importOptions for a batch of files: a longer
// limit, since one attempt converts several files.
var importBatchOptions = func() workflow.ActivityOptions {
	o := importOptions
	o.StartToCloseTimeout = time.Hour
	return o
}()

// Batch bounds: the files of one ImportBatch activity (importBatchFiles in
// histories of version importVersionBatches, importWaveFiles since
// importVersionWaves) and its bytes.
const (
	importBatchFiles = 16
	importWaveFiles  = 32
	importBatchBytes = 32 << 20
)

// Versions of Import ("import-batches"): importVersionBatches converts files
// in batches (ImportBatch) instead of one activity per file (ImportFile),
// Concurrency batches sharing the files, at most importBatchFiles each;
// importVersionWaves cuts at least two batches per slot, at most
// importWaveFiles each, so a slot's next batch converts while PostgreSQL
// writes its last one, and a large import runs half the activities
// (bench/REPORT.md, "Run: batches in two waves").
const (
	importVersionBatches = 1
	importVersionWaves   = 2
)

// Import converts each file into a document with bounded concurrency, in
// batches of files (one activity converts up to importBatchFiles), so the
// per-activity cost is paid once per batch while one bad file still fails
// alone with its reason; the documents to vectorize are indexed in groups as
// they accumulate. Its progress (QueryProgress) has the per-file items.
// Histories started before batches (version DefaultVersion) keep running one
// ImportFile activity per file.
func Import(ctx workflow.Context, in ImportInput) (BatchProgress, error) {
	n := len(in.Files)
	p := BatchProgress{Total: n, Pending: n, FailedIDs: []int64{}, Items: make([]ItemResult, n)}
	for i, f := range in.Files {
		p.Items[i] = ItemResult{Index: i, Name: f.Name, Status: ItemPending}
	}
	p.Step = StepImporting
	if err := ServeProgress(ctx, &p); err != nil {
		return p, err
	}
	r := &importRun{in: in, p: &p, itemOf: map[int64]int{}}
	r.queue = indexQueue{wg: workflow.NewWaitGroup(ctx), indexed: r.indexed}
	var err error
	if v := workflow.GetVersion(ctx, "import-batches", workflow.DefaultVersion, importVersionWaves); v == workflow.DefaultVersion {
		err = r.perFile(ctx)
	} else {
		err = r.batched(ctx, v)
	}
	if err != nil {
		return p, err // cancelled
	}
	// Files first; then the documents not yet indexed.
	r.queue.drain(ctx, &p.Step)
	if in.UploadPrefix != "" && p.Failed == 0 {
		var a *activities.Import
		_ = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortOptions), a.RemoveUploads, in.UploadPrefix).Get(ctx, nil)
	}
	p.Done, p.Step = true, StepDone
	return p, nil
}

// importRun is the state of one Import execution shared by its per-file
// and batched paths.
type importRun struct {
	in       ImportInput
	p        *BatchProgress
	queue    indexQueue
	inFlight int
	itemOf   map[int64]int // document id → item index
}

// indexed records a group's outcome on its files.
func (r *importRun) indexed(ids, failed []int64) {
	bad := map[int64]bool{}
	for _, id := range failed {
		bad[id] = true
	}
	for _, id := range ids {
		it := &r.p.Items[r.itemOf[id]]
		it.VectorStatus = "completed"
		if bad[id] {
			it.VectorStatus = "failed"
			r.p.FailedIDs = append(r.p.FailedIDs, id)
		}
	}
}

// reject fails a file the API refused without running it.
func (r *importRun) reject(i int, reason string) {
	r.p.Pending--
	r.p.Failed++
	r.p.Items[i].Status, r.p.Items[i].Reason = ItemFailed, reason
}

// start marks a file running.
func (r *importRun) start(i int) {
	r.p.Pending--
	r.p.Running++
	r.p.Items[i].Status = ItemRunning
}

// finish records a running file's outcome ("" reason: imported as id) and
// queues its document for indexing.
func (r *importRun) finish(ctx workflow.Context, i int, id int64, title, reason string) {
	r.p.Running--
	it := &r.p.Items[i]
	if reason != "" {
		r.p.Failed++
		it.Status, it.Reason = ItemFailed, reason
		return
	}
	r.p.Completed++
	it.Status, it.DocumentID, it.Title = ItemCompleted, id, title
	if r.in.Vectorize {
		r.itemOf[id] = i
		r.queue.add(ctx, id)
	}
}

// perFile runs one ImportFile activity per file (histories started before
// batches).
func (r *importRun) perFile(ctx workflow.Context) error {
	limit := max(r.in.Concurrency, 1)
	for i, f := range r.in.Files {
		if f.Reject != "" {
			r.reject(i, f.Reject)
			continue
		}
		if err := workflow.Await(ctx, func() bool { return r.inFlight < limit }); err != nil {
			return err
		}
		r.inFlight++
		r.start(i)
		r.queue.wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer r.queue.wg.Done()
			var a *activities.Import
			var res activities.ImportFileResult
			err := workflow.ExecuteActivity(workflow.WithActivityOptions(gctx, importOptions), a.ImportFile,
				activities.ImportFileInput{Spec: r.in.ImportSpec, Index: i, File: f}).Get(gctx, &res)
			r.inFlight--
			if err != nil {
				r.finish(gctx, i, 0, "", RootMessage(err))
				return
			}
			r.finish(gctx, i, res.DocumentID, res.Title, "")
		})
	}
	return workflow.Await(ctx, func() bool { return r.inFlight == 0 })
}

// batched runs the files in ImportBatch activities: the rejected files fail
// at once, the others are cut into batches (importBatches, as version says)
// of which up to Concurrency run at once, each converting its share of the
// Concurrency files at once.
func (r *importRun) batched(ctx workflow.Context, version workflow.Version) error {
	limit := max(r.in.Concurrency, 1)
	var accepted []activities.ImportBatchFile
	for i, f := range r.in.Files {
		if f.Reject != "" {
			r.reject(i, f.Reject)
			continue
		}
		accepted = append(accepted, activities.ImportBatchFile{Index: i, File: f})
	}
	batches := importBatches(accepted, limit, importBatchFiles)
	if version >= importVersionWaves {
		batches = importBatches(accepted, 2*limit, importWaveFiles)
	}
	slots := min(limit, max(len(batches), 1))
	conc := max(limit/slots, 1)
	for _, b := range batches {
		if err := workflow.Await(ctx, func() bool { return r.inFlight < slots }); err != nil {
			return err
		}
		r.inFlight++
		for _, f := range b {
			r.start(f.Index)
		}
		r.queue.wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer r.queue.wg.Done()
			var a *activities.Import
			var res activities.ImportBatchResult
			err := workflow.ExecuteActivity(workflow.WithActivityOptions(gctx, importBatchOptions), a.ImportBatch,
				activities.ImportBatchInput{Spec: r.in.ImportSpec, Files: b, Concurrency: conc, MaxAttempts: importAttempts}).Get(gctx, &res)
			r.inFlight--
			got := map[int]activities.ImportBatchItem{}
			for _, it := range res.Items {
				got[it.Index] = it
			}
			for _, f := range b {
				it, ok := got[f.Index]
				switch {
				case err != nil:
					r.finish(gctx, f.Index, 0, "", RootMessage(err))
				case !ok:
					r.finish(gctx, f.Index, 0, "", f.File.Name+": the batch returned no result for this file")
				default:
					r.finish(gctx, f.Index, it.DocumentID, it.Title, it.Reason)
				}
			}
		})
	}
	return workflow.Await(ctx, func() bool { return r.inFlight == 0 })
}

// importBatches cuts the files into batches: as many as it takes for share
// batches to share the files evenly, at most maxFiles files and (where sizes
// are known) importBatchBytes bytes each; a larger file goes alone.
func importBatches(files []activities.ImportBatchFile, share, maxFiles int) [][]activities.ImportBatchFile {
	if len(files) == 0 {
		return nil
	}
	per := min(max((len(files)+share-1)/share, 1), maxFiles)
	var out [][]activities.ImportBatchFile
	var cur []activities.ImportBatchFile
	var bytes int64
	for _, f := range files {
		if len(cur) > 0 && (len(cur) >= per || bytes+f.File.Size > importBatchBytes) {
			out = append(out, cur)
			cur, bytes = nil, 0
		}
		cur = append(cur, f)
		bytes += f.File.Size
	}
	return append(out, cur)
}
