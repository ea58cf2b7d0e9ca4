package api

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// fakeTemporal stands in for the workflow engine: it records the ids of the
// workflows the API starts, knows no workflow when asked about one, and
// reports every run it is handed as completed. Any other method of
// client.Client is absent (a call panics), so a test sees every use.
type fakeTemporal struct {
	client.Client
	mu      sync.Mutex
	started []string
}

func (f *fakeTemporal) record(id string) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, id)
	return fakeRun{id: id}, nil
}

// SignalWithStartWorkflow records the workflow id.
func (f *fakeTemporal) SignalWithStartWorkflow(_ context.Context, id, _ string, _ any, _ client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	return f.record(id)
}

// ExecuteWorkflow records the workflow id.
func (f *fakeTemporal) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	return f.record(o.ID)
}

// DescribeWorkflowExecution knows no workflow (a job view is 404).
func (f *fakeTemporal) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return nil, serviceerror.NewNotFound("workflow not found")
}

// CountWorkflow knows no workflow.
func (f *fakeTemporal) CountWorkflow(context.Context, *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	return &workflowservice.CountWorkflowExecutionsResponse{}, nil
}

// ListWorkflow knows no workflow.
func (f *fakeTemporal) ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	return &workflowservice.ListWorkflowExecutionsResponse{}, nil
}

// CancelWorkflow knows no workflow.
func (f *fakeTemporal) CancelWorkflow(context.Context, string, string) error {
	return serviceerror.NewNotFound("workflow not found")
}

// GetWorkflow returns a run that has completed.
func (f *fakeTemporal) GetWorkflow(_ context.Context, id, _ string) client.WorkflowRun {
	return fakeRun{id: id}
}

func (f *fakeTemporal) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.started...)
}

type fakeRun struct {
	client.WorkflowRun
	id string
}

func (r fakeRun) GetID() string    { return r.id }
func (r fakeRun) GetRunID() string { return "run-" + r.id }

// Get reports the run completed.
func (r fakeRun) Get(context.Context, any) error { return nil }

// tokenUser reads the user a token of the harness was issued to.
func tokenUser(h *harness, token string) *models.User {
	h.t.Helper()
	claims, err := h.s.parseToken(token)
	if err != nil {
		h.t.Fatal(err)
	}
	id, _ := strconv.ParseInt(claims.Subject, 10, 64)
	u, err := h.d.DB.GetUser(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return u
}

// kbTenant inserts a second tenant.
func kbTenant(h *harness, slug string) *models.Tenant {
	h.t.Helper()
	now := time.Now().UTC()
	tn := &models.Tenant{Slug: slug, Name: slug, CreatedAt: now, UpdatedAt: now}
	if _, err := h.d.DB.NewInsert().Model(tn).Exec(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	return tn
}

// bodyCase is one request of a table of body fields: the status it must get
// and, for a refusal, a text the message must contain. A refusal must leave
// the database as it was.
type bodyCase struct {
	name   string
	token  string
	body   map[string]any
	status int
	want   string
	check  func(t *testing.T, r *resp)
}

func runBodyCases(t *testing.T, h *harness, method, path string, base map[string]any, cases []bodyCase) {
	t.Helper()
	for _, tc := range cases {
		body := map[string]any{}
		for k, v := range base {
			body[k] = v
		}
		for k, v := range tc.body {
			body[k] = v
		}
		tok := tc.token
		if tok == "" {
			tok = h.admin
		}
		before := h.fingerprint()
		r := h.do(method, path, body, tok)
		if r.Status != tc.status || (r.Status >= 400 && r.Code != r.Status) {
			t.Errorf("%s: status %d, want %d: %s", tc.name, r.Status, tc.status, r.Raw)
			continue
		}
		if r.Status >= 400 {
			if !strings.Contains(r.Msg, tc.want) {
				t.Errorf("%s: message %q does not name %q", tc.name, r.Msg, tc.want)
			}
			if h.fingerprint() != before {
				t.Errorf("%s: a refused request changed the database", tc.name)
			}
		}
		if tc.check != nil {
			tc.check(t, r)
		}
	}
}

func vectorStatusIs(want string) func(t *testing.T, r *resp) {
	return func(t *testing.T, r *resp) {
		t.Helper()
		var d DocumentResponse
		r.into(t, &d)
		if d.VectorStatus != want {
			t.Errorf("vector_status %q, want %q", d.VectorStatus, want)
		}
	}
}

func parseMetaIs(want map[string]any) func(t *testing.T, r *resp) {
	return func(t *testing.T, r *resp) {
		t.Helper()
		var d DocumentResponse
		r.into(t, &d)
		if !reflect.DeepEqual(d.ParseMeta, want) {
			t.Errorf("parse_meta %v, want %v: %s", d.ParseMeta, want, r.Data)
		}
	}
}

// serverManaged are the vector states only the server sets, and a value that
// is no state at all: a body sending any of them is 422.
var serverManaged = []string{"processing", "completed", "failed", "outdated", "indexed"}

func TestDocumentCreateBodyFields(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		acme := kbTenant(h, "acme")
		editor := h.userToken(models.RoleEditor, site.ID)
		meta := map[string]any{"parser": "pdf", "pages": 3.0, "outline": []any{"a", "b"}, "ocr": map[string]any{"lang": "en"}}
		cases := []bodyCase{
			{name: "tenant_id of the site", body: map[string]any{"tenant_id": site.TenantID}, status: 201},
			{name: "tenant_id null", body: map[string]any{"tenant_id": nil}, status: 201},
			{name: "tenant_id of another tenant", body: map[string]any{"tenant_id": acme.ID}, status: 400, want: "tenant_id"},
			{name: "tenant_id of no tenant", body: map[string]any{"tenant_id": 999999}, status: 400, want: "tenant_id"},
			{name: "tenant_id negative", body: map[string]any{"tenant_id": -1}, status: 422, want: "tenant_id"},
			{name: "tenant_id a string", body: map[string]any{"tenant_id": "1"}, status: 422, want: "tenant_id"},
			{name: "vector_status none", body: map[string]any{"vector_status": "none"}, status: 201, check: vectorStatusIs("none")},
			{name: "vector_status pending without the workflow engine", body: map[string]any{"vector_status": "pending"},
				status: 503, want: "workflow engine"},
			{name: "vector_status pending as an editor", token: editor, body: map[string]any{"vector_status": "pending"},
				status: 403},
			{name: "vector_status none as an editor", token: editor, body: map[string]any{"vector_status": "none"}, status: 201},
			{name: "parse_meta object", body: map[string]any{"parse_meta": meta}, status: 201, check: parseMetaIs(meta)},
			{name: "parse_meta empty object", body: map[string]any{"parse_meta": map[string]any{}}, status: 201,
				check: parseMetaIs(map[string]any{})},
			{name: "parse_meta null", body: map[string]any{"parse_meta": nil}, status: 201, check: parseMetaIs(nil)},
			{name: "parse_meta a string", body: map[string]any{"parse_meta": "pdf"}, status: 422, want: "parse_meta"},
			{name: "parse_meta an array", body: map[string]any{"parse_meta": []int{1}}, status: 422, want: "parse_meta"},
			{name: "parse_meta with NUL", body: map[string]any{"parse_meta": map[string]any{"k": "a\x00b"}}, status: 422,
				want: "parse_meta.k"},
		}
		for _, v := range serverManaged {
			cases = append(cases, bodyCase{name: "vector_status " + v, body: map[string]any{"vector_status": v},
				status: 422, want: "vector_status"})
		}
		runBodyCases(t, h, "POST", adminPath+"/documents", map[string]any{"title": "T", "site_id": site.ID}, cases)

		// parse_meta is stored with the document and shown by the details of
		// both surfaces; lists show null (the key is always there); an update
		// keeps it and cannot send it.
		d := kbDocument(h, map[string]any{"title": "Parsed", "site_id": site.ID, "status": "published", "parse_meta": meta})
		for _, path := range []string{adminPath + "/documents/" + itoa(d.ID), clientPath + "/documents/" + itoa(d.ID)} {
			parseMetaIs(meta)(t, h.must(200, "GET", path, nil, h.admin))
		}
		for _, path := range []string{adminPath + "/documents?exclude_content=false", adminPath + "/documents?keyword=Parsed",
			clientPath + "/documents?exclude_content=false", clientPath + "/documents?keyword=Parsed"} {
			r := h.must(200, "GET", path, nil, h.admin)
			var pg struct {
				List []map[string]json.RawMessage `json:"list"`
			}
			r.into(t, &pg)
			if len(pg.List) == 0 {
				t.Fatalf("%s: empty", path)
			}
			for _, item := range pg.List {
				if v, ok := item["parse_meta"]; !ok || string(v) != "null" {
					t.Fatalf("%s: parse_meta %s, want null", path, v)
				}
			}
		}
		h.must(200, "PUT", adminPath+"/documents/"+itoa(d.ID), map[string]any{"title": "Parsed again"}, h.admin)
		parseMetaIs(meta)(t, h.must(200, "GET", adminPath+"/documents/"+itoa(d.ID), nil, h.admin))
		if r := h.do("PUT", adminPath+"/documents/"+itoa(d.ID), map[string]any{"parse_meta": nil}, h.admin); r.Status != 422 ||
			!strings.Contains(r.Msg, "parse_meta") {
			t.Fatalf("parse_meta on update: %d %s", r.Status, r.Raw)
		}
	})
}

func TestDocumentUpdateVectorStatus(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		editor := h.userToken(models.RoleEditor, site.ID)
		d := kbDocument(h, map[string]any{"title": "T", "site_id": site.ID})
		kbSetDoc(h, d.ID, "vector_status = ?", models.VecCompleted)
		cases := []bodyCase{
			{name: "vector_status none", body: map[string]any{"vector_status": "none"}, status: 200, check: vectorStatusIs("completed")},
			{name: "vector_status none with an edit", body: map[string]any{"vector_status": "none", "summary": "s"}, status: 200,
				check: vectorStatusIs("completed")},
			{name: "vector_status pending without the workflow engine", body: map[string]any{"vector_status": "pending"},
				status: 503, want: "workflow engine"},
			{name: "vector_status pending as an editor", token: editor, body: map[string]any{"vector_status": "pending", "summary": "x"},
				status: 403},
			{name: "vector_status null", body: map[string]any{"vector_status": nil}, status: 200, check: vectorStatusIs("completed")},
		}
		for _, v := range serverManaged {
			cases = append(cases, bodyCase{name: "vector_status " + v, body: map[string]any{"vector_status": v, "summary": "y"},
				status: 422, want: "vector_status"})
		}
		runBodyCases(t, h, "PUT", adminPath+"/documents/"+itoa(d.ID), nil, cases)
	})
}

// TestVectorStatusPendingQueuesVectorization checks that vector_status
// pending on create and update is the :vectorize request: the document is
// pending and its vectorize workflow is started once, recorded as the same
// kind of job, in automatic and manual mode alike.
func TestVectorStatusPendingQueuesVectorization(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		fake := &fakeTemporal{}
		h.d.Temporal = fake
		site := kbSite(h, "Alpha")
		siteAdmin := h.userToken(models.RoleSiteAdmin, site.ID)
		ctx := context.Background()
		started := func(want ...int64) {
			t.Helper()
			var ids []string
			for _, id := range want {
				ids = append(ids, workflows.VectorizeDocID(id))
			}
			if got := fake.ids(); strings.Join(got, " ") != strings.Join(ids, " ") {
				t.Fatalf("workflows started %v, want %v", got, ids)
			}
			fake.started = nil
			for _, id := range want {
				j, err := h.d.DB.GetJob(ctx, workflows.VectorizeDocID(id))
				if err != nil || j.Kind != JobVectorizeDocument {
					t.Fatalf("job of document %d: %+v %v", id, j, err)
				}
			}
		}
		var d DocumentResponse
		// A published document in automatic mode: one start, not the hook's
		// and the request's.
		h.must(201, "POST", adminPath+"/documents", map[string]any{"title": "A", "site_id": site.ID,
			"status": "published", "vector_status": "pending"}, siteAdmin).into(t, &d)
		if d.VectorStatus != models.VecPending {
			t.Fatalf("created: %+v", d)
		}
		started(d.ID)
		h.must(201, "POST", adminPath+"/documents", map[string]any{"title": "B", "site_id": site.ID,
			"vector_status": "pending"}, h.admin).into(t, &d)
		started(d.ID)
		// A draft without the request starts nothing; the update asks for it.
		h.must(201, "POST", adminPath+"/documents", map[string]any{"title": "C", "site_id": site.ID}, h.admin).into(t, &d)
		started()
		kbSetDoc(h, d.ID, "vector_status = ?", models.VecFailed)
		h.must(200, "PUT", adminPath+"/documents/"+itoa(d.ID), map[string]any{"vector_status": "pending"}, siteAdmin).into(t, &d)
		if d.VectorStatus != models.VecPending {
			t.Fatalf("updated: %+v", d)
		}
		started(d.ID)
		// The same as :vectorize on the same document.
		kbSetDoc(h, d.ID, "vector_status = ?", models.VecCompleted)
		h.must(200, "POST", adminPath+"/documents/"+itoa(d.ID)+":vectorize", nil, siteAdmin)
		row, _ := h.d.DB.GetDocument(ctx, d.ID)
		if row.VectorStatus != models.VecPending {
			t.Fatalf(":vectorize: %s", row.VectorStatus)
		}
		started(d.ID)
	})
}

func TestCollectionCreateTenantID(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		acme := kbTenant(h, "acme")
		runBodyCases(t, h, "POST", adminPath+"/collections", map[string]any{"title": "C", "site_id": site.ID}, []bodyCase{
			{name: "tenant_id of the site", body: map[string]any{"tenant_id": site.TenantID}, status: 201,
				check: func(t *testing.T, r *resp) {
					var c CollectionResponse
					r.into(t, &c)
					if c.TenantID != site.TenantID {
						t.Errorf("tenant %d", c.TenantID)
					}
				}},
			{name: "tenant_id absent", status: 201},
			{name: "tenant_id of another tenant", body: map[string]any{"tenant_id": acme.ID}, status: 400, want: "tenant_id"},
			{name: "tenant_id of no tenant", body: map[string]any{"tenant_id": 424242}, status: 400, want: "tenant_id"},
			{name: "tenant_id negative", body: map[string]any{"tenant_id": -3}, status: 422, want: "tenant_id"},
			{name: "tenant_id an object", body: map[string]any{"tenant_id": map[string]any{}}, status: 422, want: "tenant_id"},
		})
	})
}
func TestSiteCreateAdministrator(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		n := 0
		name := func() string { n++; return fmt.Sprintf("Site %d", n) }
		existing, email := map[string]int64{}, map[string]string{}
		for _, role := range []string{models.RoleSiteAdmin, models.RoleEditor, models.RoleAdmin} {
			u := tokenUser(h, h.userToken(role))
			existing[role], email[role] = u.ID, u.Email
		}
		siteIDs := func(userID int64) []int64 {
			ids, err := h.d.DB.UserSiteIDs(ctx, userID)
			if err != nil {
				t.Fatal(err)
			}
			return ids
		}
		siteOf := func(r *resp) int64 {
			var s SiteResponse
			r.into(t, &s)
			return s.ID
		}
		assigned := func(role string) func(t *testing.T, r *resp) {
			return func(t *testing.T, r *resp) {
				if ids := siteIDs(existing[role]); len(ids) == 0 || ids[len(ids)-1] != siteOf(r) {
					t.Errorf("%s: sites %v, want the new site %d", role, ids, siteOf(r))
				}
			}
		}
		created := func(email, wantName string) func(t *testing.T, r *resp) {
			return func(t *testing.T, r *resp) {
				u, err := h.d.DB.UserByEmail(ctx, email)
				if err != nil {
					t.Errorf("%s not created: %v", email, err)
					return
				}
				if u.Role != models.RoleSiteAdmin || u.Status != models.UserActive || u.Name != wantName ||
					fmt.Sprint(siteIDs(u.ID)) != fmt.Sprint([]int64{siteOf(r)}) {
					t.Errorf("%s: %+v sites %v", email, u, siteIDs(u.ID))
				}
				// The new administrator logs in with the password and reaches the site.
				var login LoginResult
				h.must(200, "POST", adminPath+"/users:login", map[string]any{"email": email, "password": "s3cret-pass"}, "").into(t, &login)
				h.must(200, "PUT", adminSites+"/"+itoa(siteOf(r)), map[string]any{"description": "mine"}, login.Token)
			}
		}
		usersBefore := kbCount(h, (*models.User)(nil))
		var cases []bodyCase
		add := func(tc bodyCase) {
			tc.body["name"] = name()
			cases = append(cases, tc)
		}
		add(bodyCase{name: "no admin fields", body: map[string]any{}, status: 201})
		add(bodyCase{name: "existing site_admin", body: map[string]any{"admin_email": email[models.RoleSiteAdmin]}, status: 201,
			check: assigned(models.RoleSiteAdmin)})
		add(bodyCase{name: "existing editor, email in another case, name and password ignored",
			body: map[string]any{"admin_email": strings.ToUpper(email[models.RoleEditor]), "admin_name": "X", "admin_password": "whatever1"}, status: 201,
			check: assigned(models.RoleEditor)})
		add(bodyCase{name: "existing admin", body: map[string]any{"admin_email": email[models.RoleAdmin]}, status: 201,
			check: func(t *testing.T, r *resp) {
				if ids := siteIDs(existing[models.RoleAdmin]); len(ids) != 0 {
					t.Errorf("admin assigned %v", ids)
				}
			}})
		add(bodyCase{name: "new user with a name", body: map[string]any{"admin_email": "boss@example.com", "admin_name": " Boss ",
			"admin_password": "s3cret-pass"}, status: 201, check: created("boss@example.com", "Boss")})
		add(bodyCase{name: "new user, default name", body: map[string]any{"admin_email": "Jane.Doe@example.com",
			"admin_password": "s3cret-pass"}, status: 201, check: created("jane.doe@example.com", "Jane.Doe")})
		add(bodyCase{name: "new user without a password", body: map[string]any{"admin_email": "nopw@example.com"},
			status: 422, want: "admin_password"})
		add(bodyCase{name: "password too short", body: map[string]any{"admin_email": "short@example.com", "admin_password": "1234567"},
			status: 422, want: "admin_password"})
		add(bodyCase{name: "password too long", body: map[string]any{"admin_email": "long@example.com",
			"admin_password": strings.Repeat("p", 101)}, status: 422, want: "admin_password"})
		add(bodyCase{name: "not an email", body: map[string]any{"admin_email": "boss", "admin_password": "s3cret-pass"},
			status: 422, want: "admin_email"})
		add(bodyCase{name: "password without an email", body: map[string]any{"admin_password": "s3cret-pass"},
			status: 422, want: "admin_email"})
		add(bodyCase{name: "name too long", body: map[string]any{"admin_email": "x@example.com", "admin_password": "s3cret-pass",
			"admin_name": strings.Repeat("n", 101)}, status: 422, want: "admin_name"})
		add(bodyCase{name: "email a number", body: map[string]any{"admin_email": 5}, status: 422, want: "admin_email"})
		runBodyCases(t, h, "POST", adminSites, nil, cases)
		if got := kbCount(h, (*models.User)(nil)); got != usersBefore+2 {
			t.Fatalf("users %d, want %d", got, usersBefore+2)
		}
		// A site refused for its own fields creates no user either.
		h.sitesNew(map[string]any{"name": "Taken"})
		before := h.fingerprint()
		h.must(409, "POST", adminSites, map[string]any{"name": "Taken", "admin_email": "late@example.com", "admin_password": "s3cret-pass"}, h.admin)
		if h.fingerprint() != before {
			t.Fatal("a refused site changed the database")
		}
	})
}

// TestSiteAndAdministratorAreOneWrite makes the user insert fail inside the
// database: the site written before it in the same transaction is gone too.
func TestSiteAndAdministratorAreOneWrite(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		ddl := []string{`CREATE TRIGGER refuse_users BEFORE INSERT ON users BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`}
		if h.d.DB.Postgres() {
			ddl = []string{
				`CREATE FUNCTION refuse_users() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$ LANGUAGE plpgsql`,
				`CREATE TRIGGER refuse_users BEFORE INSERT ON users FOR EACH ROW EXECUTE FUNCTION refuse_users()`,
			}
		}
		for _, q := range ddl {
			if _, err := h.d.DB.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		sites := h.sitesCount()
		r := h.do("POST", adminSites, map[string]any{"name": "Half", "admin_email": "half@example.com", "admin_password": "s3cret-pass"}, h.admin)
		if r.Status < 500 {
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
		if h.sitesCount() != sites {
			t.Fatal("the site was written without its administrator")
		}
	})
}
