package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/lorekb/lore/workflows"
)

// wfMeta is what an operator sees of a workflow in the Web UI: its search
// attributes and memo title.
type wfMeta struct {
	Kind, RequestedBy, Title string
	Tenant, Site             int64
}

// describeMeta reads a workflow's search attributes and memo title.
func (a *app) describeMeta(id string) wfMeta {
	a.t.Helper()
	d, err := a.d.Temporal.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		a.t.Fatalf("describe %s: %v", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	dc := converter.GetDefaultDataConverter()
	attrs := info.GetSearchAttributes().GetIndexedFields()
	var m wfMeta
	for name, dst := range map[string]any{workflows.AttrKind.GetName(): &m.Kind, workflows.AttrRequestedBy.GetName(): &m.RequestedBy,
		workflows.AttrTenant.GetName(): &m.Tenant, workflows.AttrSite.GetName(): &m.Site} {
		if p := attrs[name]; p != nil {
			if err := dc.FromPayload(p, dst); err != nil {
				a.t.Fatalf("%s of %s: %v", name, id, err)
			}
		}
	}
	if p := info.GetMemo().GetFields()[workflows.MemoTitle]; p != nil {
		_ = dc.FromPayload(p, &m.Title)
	}
	return m
}

// listByAttrs lists the workflow ids of this app's task queue that match a
// visibility query on Lore's search attributes, as the Web UI's filter does.
func (a *app) listByAttrs(query string) []string {
	a.t.Helper()
	res, err := a.d.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("TaskQueue = '%s' AND %s", a.queue, query)})
	if err != nil {
		a.t.Fatalf("list %q: %v", query, err)
	}
	var ids []string
	for _, e := range res.Executions {
		ids = append(ids, e.Execution.WorkflowId)
	}
	return ids
}

// TestChatRunsCarrySearchAttributesAndTitle starts chat turns in two sites
// and finds each site's runs by the LoreSiteId and LoreKind search
// attributes, each run named by its memo title and requester.
func TestChatRunsCarrySearchAttributesAndTitle(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	siteA := a.site("Visible chats A")
	siteB := a.site("Visible chats B")
	doc := a.newDoc(siteA, "Installation", installDoc, "published")
	a.waitStatus(doc, "completed")
	for _, site := range []int64{siteA, siteB} {
		status, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "How do I install Lore?", "stream": true,
			"filter": map[string]any{"site_id": site}, "user": fmt.Sprintf("member-%d", site)})
		if status != 200 || len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" {
			t.Fatalf("chat in site %d: %d %v", site, status, evs)
		}
	}
	var ids []string
	eventually(t, 30*time.Second, "site A's chat run listed by its search attributes", func() bool {
		ids = a.listByAttrs(fmt.Sprintf("%s = %d AND %s = '%s'", workflows.AttrSite.GetName(), siteA,
			workflows.AttrKind.GetName(), workflows.KindChat))
		return len(ids) > 0
	})
	if len(ids) != 1 || !strings.HasPrefix(ids[0], "chat-") {
		t.Fatalf("site A's chat runs: %v", ids)
	}
	m := a.describeMeta(ids[0])
	if m.Kind != workflows.KindChat || m.Site != siteA || m.Tenant != 1 || m.RequestedBy != fmt.Sprintf("member-%d", siteA) ||
		!strings.HasPrefix(m.Title, "Chat turn 1 of thread") || !strings.Contains(m.Title, "(site Visible chats A)") {
		t.Fatalf("chat run meta %+v", m)
	}
	// The Web UI's "jobs only" saved query (docs/operations.md) lists the
	// document's vectorization job and none of the chat turns; its negation
	// lists both turns.
	job := workflows.AttrJob.GetName()
	eventually(t, 30*time.Second, "the chat turns listed by LoreJob = false", func() bool {
		return len(a.listByAttrs(job+" = false")) == 2
	})
	jobs := a.listByAttrs(job + " = true")
	if len(jobs) == 0 {
		t.Fatal("LoreJob = true lists no job (the vectorization of the published document)")
	}
	for _, id := range jobs {
		if strings.HasPrefix(id, "chat-") {
			t.Fatalf("LoreJob = true lists the chat run %s: %v", id, jobs)
		}
	}
}
