package api

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestReferenceAdminInviteFlow: the admin app's invite (email and role
// only) gives an active user named after its email, whose first login opens
// every route (the app has no forced password change); an unused temporary
// password still expires.
func TestReferenceAdminInviteFlow(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	var inv UserWithPassword
	h.must(201, "POST", "/admin/v1/users:invite", map[string]any{"email": "ann.lee@example.com", "role": "site_admin",
		"managed_site_ids": []int64{}}, h.admin).into(t, &inv)
	if inv.User.Status != "active" || inv.User.Name != "ann.lee" || inv.Password == "" {
		t.Fatalf("invite: %+v", inv)
	}
	var lr LoginResult
	h.must(200, "POST", "/admin/v1/users:login", map[string]string{"email": "ann.lee@example.com", "password": inv.Password}, "").into(t, &lr)
	if lr.User.Status != "active" {
		t.Fatalf("login: %+v", lr.User)
	}
	for _, p := range []string{"/admin/v1/sites?page=1&size=10", "/admin/v1/users/" + itoa(inv.User.ID)} {
		h.must(200, "GET", p, nil, lr.Token)
	}
	// Used once, the password is the user's own: a later login works.
	h.must(200, "POST", "/admin/v1/users:login", map[string]string{"email": "ann.lee@example.com", "password": inv.Password}, "")

	h2 := newHarness(t, "sqlite", map[string]string{"LORE_TEMP_PASSWORD_TTL": "1ms"})
	h2.must(201, "POST", "/admin/v1/users:invite", map[string]any{"email": "late@example.com"}, h2.admin).into(t, &inv)
	time.Sleep(10 * time.Millisecond)
	if r := h2.must(400, "POST", "/admin/v1/users:login", map[string]string{"email": "late@example.com", "password": inv.Password}, ""); !strings.Contains(r.Msg, "expired") {
		t.Fatalf("expired temporary password: %s", r.Raw)
	}
}

// TestReferenceAdminTenantAdminRole: the app's organisation admin
// (tenant_admin) is accepted in invite, create, update and the list filter,
// stored as admin of the user's tenant, and read back as tenant_admin under
// /admin/v1 for an admin below the platform (admin on Lore's own prefix).
func TestReferenceAdminTenantAdminRole(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	tn := &models.Tenant{Name: "Acme", Slug: "acme", Plan: "{}", Status: "active"}
	if err := h.d.DB.CreateTenant(context.Background(), tn); err != nil {
		t.Fatal(err)
	}
	var inv UserWithPassword
	h.must(201, "POST", "/admin/v1/users:invite", map[string]any{"email": "org@acme.example.com", "role": "tenant_admin",
		"managed_site_ids": []int64{}, "tenant_id": tn.ID}, h.admin).into(t, &inv)
	if inv.User.Role != "tenant_admin" || inv.User.TenantID != tn.ID {
		t.Fatalf("invite: %+v", inv.User)
	}
	u, err := h.d.DB.GetUser(context.Background(), inv.User.ID)
	if err != nil || u.Role != models.RoleAdmin {
		t.Fatalf("stored role: %+v %v", u, err)
	}
	var own UserResponse
	h.must(200, "GET", adminPath+"/users/"+itoa(inv.User.ID), nil, h.admin).into(t, &own)
	if own.Role != "admin" {
		t.Fatalf("Lore's prefix: %s", own.Role)
	}
	var lr LoginResult
	h.must(200, "POST", "/admin/v1/users:login", map[string]string{"email": "org@acme.example.com", "password": inv.Password}, "").into(t, &lr)
	if lr.User.Role != "tenant_admin" {
		t.Fatalf("login: %s", lr.User.Role)
	}
	// The platform admin reads admin; the organisation admin may invite its
	// own organisation admins and sees them in the list filter.
	var me UserResponse
	h.must(200, "GET", "/admin/v1/users/"+itoa(lr.User.ID), nil, lr.Token).into(t, &me)
	if me.Role != "tenant_admin" {
		t.Fatalf("self: %s", me.Role)
	}
	h.must(201, "POST", "/admin/v1/users:invite", map[string]any{"email": "second@acme.example.com", "role": "tenant_admin"}, lr.Token)
	var pg Page[UserResponse]
	h.must(200, "GET", "/admin/v1/users?role=tenant_admin&page=1&size=10", nil, lr.Token).into(t, &pg)
	if pg.Pagination.Total != 2 || pg.List[0].Role != "tenant_admin" {
		t.Fatalf("list: %+v", pg)
	}
	// Role change from the row menu, and POST /users.
	var site UserWithPassword
	h.must(201, "POST", "/admin/v1/users:invite", map[string]any{"email": "ed@acme.example.com", "role": "site_admin"}, lr.Token).into(t, &site)
	var up UserResponse
	h.must(200, "PUT", "/admin/v1/users/"+itoa(site.User.ID), map[string]any{"role": "tenant_admin"}, lr.Token).into(t, &up)
	if up.Role != "tenant_admin" {
		t.Fatalf("update: %s", up.Role)
	}
	var cr UserResponse
	h.must(201, "POST", "/admin/v1/users", map[string]any{"name": "C", "email": "c@acme.example.com", "password": "password123",
		"role": "tenant_admin"}, lr.Token).into(t, &cr)
	if cr.Role != "tenant_admin" {
		t.Fatalf("create: %s", cr.Role)
	}
	var pa UserResponse
	h.must(200, "GET", "/admin/v1/users/"+itoa(me.ID), nil, h.admin).into(t, &pa)
	var admins Page[UserResponse]
	h.must(200, "GET", "/admin/v1/users?role=admin&page=1&size=50", nil, h.admin).into(t, &admins)
	for _, a := range admins.List {
		if want := map[bool]string{true: "admin", false: "tenant_admin"}[a.TenantID != tn.ID]; a.Role != want {
			t.Fatalf("%s of tenant %d reads %s", a.Email, a.TenantID, a.Role)
		}
	}
	h.must(422, "POST", "/admin/v1/users:invite", map[string]any{"email": "x@acme.example.com", "role": "owner"}, lr.Token)
}

// refTemporal answers what the handlers under test ask the engine; every
// other method panics (nil embedded client).
type refTemporal struct {
	client.Client
	mu       sync.Mutex
	retrieve activities.RetrieveOutput
	running  map[string]bool // workflow ids described as running; others are gone
	queries  []string        // visibility queries received
}

type refRun struct {
	client.WorkflowRun
	out any
}

func (r refRun) Get(_ context.Context, v any) error {
	reflect.ValueOf(v).Elem().Set(reflect.ValueOf(r.out))
	return nil
}

func (f *refTemporal) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return refRun{out: f.retrieve}, nil
}

func (f *refTemporal) CountWorkflow(_ context.Context, r *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	f.mu.Lock()
	f.queries = append(f.queries, r.GetQuery())
	f.mu.Unlock()
	return nil, serviceerror.NewInvalidArgument("invalid query: unable to convert filter expression: search attribute LoreKind is not defined")
}

func (f *refTemporal) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if !f.running[id] {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	start := time.Now()
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "r1"}, Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		StartTime: timestamppb.New(start)}}, nil
}

func (f *refTemporal) QueryWorkflow(context.Context, string, string, string, ...any) (converter.EncodedValue, error) {
	return nil, serviceerror.NewNotFound("no query handler")
}

// TestReferenceAdminRetrieveTest: the vector retrieval dialog's body
// ({query, k, threshold, filter: {site_id, id}, enable_rerank, rerank_k}) is
// accepted, and its list[] of {content, score, original_score, document_id,
// document_title, metadata.chunk_index} answered beside Lore's chunks.
func TestReferenceAdminRetrieveTest(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	var site SiteResponse
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Handbook"}, h.admin).into(t, &site)
	doc := kbDocument(h, map[string]any{"title": "Install", "site_id": site.ID, "content": "Run make run.", "status": "published"})
	for i, text := range []string{"Run make run.", "Then open the browser."} {
		ch := models.Chunk{DocumentID: doc.ID, Version: 1, Index: i, SiteID: site.ID, Heading: "Install", Text: text, Start: -1, End: -1}
		if _, err := h.d.DB.NewInsert().Model(&ch).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	dense, low, rr := 0.82, 0.1, 0.93
	fake := &refTemporal{retrieve: activities.RetrieveOutput{Chunks: []activities.RankedChunk{
		{DocumentID: doc.ID, Version: 1, ChunkIndex: 0, Dense: &dense, Rerank: &rr, Fused: 0.03, Relevance: 1, Score: rr},
		{DocumentID: doc.ID, Version: 1, ChunkIndex: 1, Dense: &low, Fused: 0.01, Relevance: 0.5, Score: 0.01},
	}}}
	h.d.Temporal = fake
	body := map[string]any{"query": "how to install", "k": 5, "threshold": 0.3,
		"filter": map[string]any{"site_id": site.ID, "id": itoa(doc.ID)}, "enable_rerank": true, "rerank_k": 5}
	var out RetrieveResponse
	h.must(200, "POST", "/admin/v1/documents:retrieve", body, h.admin).into(t, &out)
	if len(out.List) != 1 || len(out.Chunks) != 1 || out.SiteID != site.ID {
		t.Fatalf("threshold 0.3 keeps the first chunk only: %+v", out)
	}
	it := out.List[0]
	if it.Content != "Run make run." || it.Score != rr || it.OriginalScore == nil || *it.OriginalScore != dense ||
		it.DocumentID != doc.ID || it.DocumentTitle != "Install" || it.Metadata["chunk_index"] != float64(0) {
		t.Fatalf("list item: %+v", it)
	}
	// Lore's own body still works; no site anywhere, or a bad document id, is 422.
	h.must(200, "POST", adminPath+"/documents:retrieve", map[string]any{"site_id": site.ID, "query": "install"}, h.admin).into(t, &out)
	if len(out.List) != 2 || out.List[1].OriginalScore != nil || out.List[1].Score != low {
		t.Fatalf("Lore's body: %+v", out.List)
	}
	h.must(422, "POST", "/admin/v1/documents:retrieve", map[string]any{"query": "x", "k": 5}, h.admin)
	h.must(422, "POST", "/admin/v1/documents:retrieve", map[string]any{"query": "x", "filter": map[string]any{"site_id": site.ID, "id": "abc"}}, h.admin)
	h.must(422, "POST", "/admin/v1/documents:retrieve", map[string]any{"query": "x", "filter": map[string]any{"site_id": site.ID}, "threshold": 2}, h.admin)

	// The chunk viewer reads data as an array of {content, metadata.chunk_index}.
	var chunks []struct {
		ID       string         `json:"id"`
		Content  string         `json:"content"`
		Metadata map[string]any `json:"metadata"`
	}
	h.must(200, "GET", "/admin/v1/documents/"+itoa(doc.ID)+"/chunks", nil, h.admin).into(t, &chunks)
	if len(chunks) != 2 || chunks[1].Content != "Then open the browser." || chunks[1].Metadata["chunk_index"] != float64(1) ||
		chunks[1].Metadata["heading_path"] != "Install" || chunks[0].ID == "" {
		t.Fatalf("chunks: %+v", chunks)
	}
}

// TestReferenceAdminCoverDelete: the document editor deletes a replaced
// cover by the name it derives from the cover URL (the URL path without its
// first segment: files/<object>:download), within the caller's sites.
func TestReferenceAdminCoverDelete(t *testing.T) {
	for _, public := range []string{"https://docs.example.com", "https://example.com/kb"} {
		h := newHarness(t, "sqlite", map[string]string{"LORE_PUBLIC_URL": public})
		var site, other SiteResponse
		h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Covers"}, h.admin).into(t, &site)
		h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Other"}, h.admin).into(t, &other)
		siteAdmin := h.userToken(models.RoleSiteAdmin, site.ID)
		upload := func(siteID int64) FileUploadResult {
			var up FileUploadResult
			h.upload("/files:upload", h.admin, []upPart{{"file", "cover.txt", []byte("cover")}},
				map[string]string{"folder": "sites/" + itoa(siteID) + "/covers"}).into(t, &up)
			return up
		}
		derived := func(up FileUploadResult) string {
			u, err := url.Parse(up.URL)
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(strings.Trim(u.Path, "/"), "/")
			return strings.Join(parts[1:], "/")
		}
		mine, theirs := upload(site.ID), upload(other.ID)
		h.must(404, "DELETE", "/admin/v1/files/"+derived(theirs), nil, siteAdmin)
		var del FileDeleted
		h.must(200, "DELETE", "/admin/v1/files/"+derived(mine), nil, siteAdmin).into(t, &del)
		if del.ObjectName != mine.ObjectName {
			t.Fatalf("%s: deleted %q, want %q", public, del.ObjectName, mine.ObjectName)
		}
		h.must(404, "GET", adminPath+"/files/"+mine.ObjectName+":info", nil, h.admin)
		h.must(200, "GET", adminPath+"/files/"+theirs.ObjectName+":info", nil, h.admin)
		h.must(400, "DELETE", "/admin/v1/files/files/..%2Fsecret:download", nil, h.admin)
	}
}

// TestReferenceClientStaleSiteToken: after a site's password changes, the
// token the client stored is answered 403, on which the client app drops it
// and shows its password gate again.
func TestReferenceClientStaleSiteToken(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	var site SiteResponse
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Vault", "slug": "vault"}, h.admin).into(t, &site)
	pw := adminPath + "/sites/" + itoa(site.ID) + "/password"
	h.must(200, "PUT", pw, map[string]string{"password": "open-sesame"}, h.admin)
	tok := saToken(h, "vault", "open-sesame")
	tree := "/v1/collections:tree?site_id=" + itoa(site.ID) + "&include_documents=true"
	h.must(200, "GET", tree, nil, "", SiteAccessHeader, tok)
	h.must(200, "PUT", pw, map[string]string{"password": "changed-pw"}, h.admin)
	if r := h.must(403, "GET", tree, nil, "", SiteAccessHeader, tok); r.Code != 403 {
		t.Fatalf("stale token: %s", r.Raw)
	}
	h.must(401, "GET", tree, nil, "")
}

// TestReferenceAdminImportProcessors: the import dialog lists the enabled
// processors of GET /system-configs/doc-processor and sends the chosen one's
// type as processor_type; the built-in converters are listed (origin
// platform, which the settings page does not save back) and an import with
// their type is converted by them.
func TestReferenceAdminImportProcessors(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	var v DocProcessorView
	h.must(200, "GET", "/admin/v1/system-configs/doc-processor", nil, h.admin).into(t, &v)
	var bi *struct{ Type, ID string }
	for _, p := range v.Processors {
		if p.Enabled && p.Origin == "platform" {
			bi = &struct{ Type, ID string }{p.Type, p.ID}
		}
	}
	if bi == nil || (bi.Type != "MinerU" && bi.Type != "Docling" && bi.Type != "PaddleOCR") {
		t.Fatalf("no built-in processor the app can pick: %+v", v)
	}
	// The settings page saves back its tenant entries only; the list keeps
	// the built-in one.
	h.must(200, "PUT", "/admin/v1/system-configs/doc-processor", map[string]any{"processors": []any{}}, h.admin).into(t, &v)
	if len(v.Processors) != 1 || v.Processors[0].ID != bi.ID {
		t.Fatalf("after save: %+v", v)
	}
	h.must(422, "PUT", "/admin/v1/system-configs/doc-processor", map[string]any{"processors": []map[string]any{{"id": "builtin",
		"name": "x", "type": "Docling", "base_url": "https://docling.example.com", "enabled": true}}}, h.admin)
	var site SiteResponse
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Imports"}, h.admin).into(t, &site)
	plan := func(proc string) int {
		body, ct := multipartBody(t, []upPart{{"file", "guide.md", []byte("# Guide\n\nText.")}},
			map[string]string{"site_id": itoa(site.ID), "processor_type": proc, "ocr_enabled": "false", "duplicate_strategy": "allow"})
		return h.do("POST", "/admin/v1/documents:import", body, h.admin, "Content-Type", ct).Status
	}
	// No workflow engine here: a processor the import accepts gets as far
	// as starting the job (503), an unknown one is refused first (400).
	if st := plan(bi.Type); st != 503 {
		t.Fatalf("import with the built-in entry's type: %d", st)
	}
	if st := plan("Tika"); st != 400 {
		t.Fatalf("unknown processor: %d", st)
	}
}

// TestReferenceAdminTasksWithoutSearchAttributes: against a Temporal server
// without Lore's search attributes the tasks page still gets a list, from
// the job rows, within the caller's scope, with the reason in msg.
func TestReferenceAdminTasksWithoutSearchAttributes(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	var a, b SiteResponse
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "A"}, h.admin).into(t, &a)
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "B"}, h.admin).into(t, &b)
	fake := &refTemporal{running: map[string]bool{}}
	for i, j := range []models.Job{
		{ID: "job-a1", Kind: "import", WorkflowID: "import-a1", SiteID: a.ID, TenantID: a.TenantID, Title: "Import into A"},
		{ID: "job-a2", Kind: "vectorize_document", WorkflowID: "vectorize-doc-a2", SiteID: a.ID, TenantID: a.TenantID},
		{ID: "job-b1", Kind: "import", WorkflowID: "import-b1", SiteID: b.ID, TenantID: b.TenantID},
		{ID: "job-gone", Kind: "import", WorkflowID: "import-gone", SiteID: a.ID, TenantID: a.TenantID},
	} {
		j.Subject = "{}"
		if err := h.d.DB.SaveJob(context.Background(), &j); err != nil {
			t.Fatal(err)
		}
		if _, err := h.d.DB.NewUpdate().Model((*models.Job)(nil)).Set("created_at = ?", time.Now().UTC().Add(time.Duration(i)*time.Second)).
			Where("id = ?", j.ID).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		fake.running[j.WorkflowID] = j.ID != "job-gone"
	}
	h.d.Temporal = fake
	siteAdmin := h.userToken(models.RoleSiteAdmin, a.ID)
	var pg Page[Task]
	r := h.must(200, "GET", "/admin/v1/tasks?page=1&size=20&site_id="+itoa(a.ID), nil, siteAdmin)
	r.into(t, &pg)
	if len(pg.List) != 2 || pg.List[0].ID != "job-a2" || pg.List[1].TaskType != "import_parsing" || pg.List[1].Status != "running" ||
		!strings.Contains(r.Msg, "search attributes") {
		t.Fatalf("tasks: %s", r.Raw)
	}
	r = h.must(200, "GET", adminPath+"/jobs?status=failed", nil, siteAdmin)
	var jobs Page[JobView]
	r.into(t, &jobs)
	if len(jobs.List) != 2 || !strings.Contains(r.Msg, "status filter is not applied") {
		t.Fatalf("jobs of a site admin: %s", r.Raw)
	}
	h.must(200, "GET", "/admin/v1/tasks?task_type=import_parsing", nil, h.admin).into(t, &pg)
	if len(pg.List) != 2 {
		t.Fatalf("every import: %+v", pg.List)
	}
	if len(fake.queries) == 0 {
		t.Fatal("visibility was not asked first")
	}
}

// chatStarts records the input of every chat run the API starts (a
// completed run to any later request about it).
type chatStarts struct {
	fakeTemporal
	inputs []workflows.ChatRunInput
}

func (f *chatStarts) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	if len(args) == 1 {
		if in, ok := args[0].(workflows.ChatRunInput); ok {
			f.mu.Lock()
			f.inputs = append(f.inputs, in)
			f.mu.Unlock()
		}
	}
	return f.fakeTemporal.ExecuteWorkflow(ctx, o, wf, args...)
}

// TestReferenceClientSourceNumbersPerTurn: the client numbers an answer's
// source list 1, 2, … (MessageSources: index + 1) and the reference's
// backend numbers each turn's sources from 1 (its graph state starts every
// request at source_offset 0; only a turn's later searches continue the
// numbers): every turn of a thread starts its run at 0, however far an
// earlier turn's numbers went.
func TestReferenceClientSourceNumbersPerTurn(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	fake := &chatStarts{}
	h.d.Temporal = fake
	var site SiteResponse
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Numbers"}, h.admin).into(t, &site)
	st, err := h.d.DB.GetSite(context.Background(), site.ID)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := h.s.startChatTurn(ctx, chatTurn{Site: st, MemberID: "v_0123456789abcdef", OwnerHash: "owner", Source: "web_chat", Text: "How do I install?"})
	if err != nil {
		t.Fatal(err)
	}
	// The first turn's searches numbered its sources 1..3.
	src := `[{"id":"1","title":"A","siteId":1,"documentId":1,"score":0.9,"sourceIndex":1},` +
		`{"id":"2","title":"B","siteId":1,"documentId":2,"score":0.8,"sourceIndex":3}]`
	if _, err := h.d.DB.PersistTurn(ctx, first.ThreadID, 1, []db.TurnRow{{Role: "assistant", Content: "Run it [1][3].", Sources: src}}, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.startChatTurn(ctx, chatTurn{Site: st, ThreadID: first.ThreadID, Existing: true, MemberID: "v_0123456789abcdef",
		OwnerHash: "owner", Source: "web_chat", Text: "And upgrade?"}); err != nil {
		t.Fatal(err)
	}
	if len(fake.inputs) != 2 || fake.inputs[1].ThreadID != first.ThreadID || fake.inputs[1].Turn != 2 {
		t.Fatalf("runs started: %+v", fake.inputs)
	}
	for i, in := range fake.inputs {
		if in.SourceOffset != 0 {
			t.Fatalf("turn %d starts its numbers after %d, want 0 (the client lists sources from 1)", i+1, in.SourceOffset)
		}
	}
}

// TestReferenceAdminDashboardMessageCount: the dashboard's AI message card
// (total_chat_messages, new_messages_today) and its recent sessions, and the
// session list's message_count, count the same messages, as the reference's
// do (one column, +1 for the question and +1 for the answer of each turn):
// a turn that searched counts its question and its answer, not the tool-call
// and tool rows stored between them.
func TestReferenceAdminDashboardMessageCount(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		var site SiteResponse
		h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Dashboard"}, h.admin).into(t, &site)
		searched := []db.TurnRow{
			{Role: "assistant", ToolCalls: `[{"id":"c1","type":"function","function":{"name":"search_knowledge_base","arguments":"{}"}}]`},
			{Role: "tool", Content: `{"query":"q","passages":[]}`, ToolCallID: "c1"},
			{Role: "assistant", Content: "Run make run [1].", Sources: "[]"},
		}
		for i, turns := range [][][]db.TurnRow{{searched, searched}, {{{Role: "assistant", Content: "Hello.", Sources: "[]"}}}} {
			thread := fmt.Sprintf("auto-dash%d", i)
			for n, rows := range turns {
				if _, err := h.d.DB.StartTurn(ctx, db.BeginTurn{ThreadID: thread, TenantID: site.TenantID, SiteID: site.ID,
					MemberID: "m", OwnerHash: "o", Source: "web_chat", UserText: "question", New: n == 0}); err != nil {
					t.Fatal(err)
				}
				if _, err := h.d.DB.PersistTurn(ctx, thread, n+1, rows, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		var list SiteChatList
		h.must(200, "GET", "/admin/v1/sites/"+itoa(site.ID)+"/chat-sessions?page=1&size=20", nil, h.admin).into(t, &list)
		listed := 0
		for _, s := range list.List {
			listed += s.MessageCount
		}
		var st db.SiteStats
		h.must(200, "GET", "/admin/v1/stats:siteStats?site_id="+itoa(site.ID), nil, h.admin).into(t, &st)
		recent := 0
		for _, s := range st.RecentSessions {
			recent += s.MessageCount
		}
		if listed != 6 || st.TotalChatMessages != 6 || recent != 6 || st.NewMessagesToday != 6 {
			t.Fatalf("session list %d, dashboard total %d, recent %d, today %d; want 6 each (%+v)", listed, st.TotalChatMessages,
				recent, st.NewMessagesToday, list.List)
		}
	})
}
