package workflows

import (
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// fakeNamespace answers starts as a namespace with the given attributes
// registered does: an unknown one is refused as the engine refuses it.
func fakeNamespace(registered map[string]bool, starts *[]client.StartWorkflowOptions) func(client.StartWorkflowOptions) (string, error) {
	return func(opts client.StartWorkflowOptions) (string, error) {
		*starts = append(*starts, opts)
		for key := range opts.TypedSearchAttributes.GetUntypedValues() {
			if !registered[key.GetName()] {
				return "", serviceerror.NewInvalidArgument("search attribute " + key.GetName() + " is not defined")
			}
		}
		return "started", nil
	}
}

func attrNames(opts client.StartWorkflowOptions) map[string]bool {
	out := map[string]bool{}
	for key := range opts.TypedSearchAttributes.GetUntypedValues() {
		out[key.GetName()] = true
	}
	return out
}

// TestStartWithMetaKeepsOlderRegistrations: on a namespace set up before
// LoreJob existed, workflows keep the attributes it has (GET /jobs still
// lists through them), and after one refusal later starts leave LoreJob out
// at once; a namespace with every attribute gets LoreJob, true for a job
// and false for a chat turn.
func TestStartWithMetaKeepsOlderRegistrations(t *testing.T) {
	older := map[string]bool{}
	for name := range SearchAttributeTypes {
		older[name] = name != AttrJob.GetName()
	}
	var starts []client.StartWorkflowOptions
	st := NewStarter(nil)
	chat := JobMeta{Kind: KindChat, TenantID: 1, SiteID: 2, Title: "Chat turn 1"}
	if _, err := StartWithMeta(st, chat, client.StartWorkflowOptions{ID: "chat-1"}, fakeNamespace(older, &starts)); err != nil {
		t.Fatal(err)
	}
	if len(starts) != 2 {
		t.Fatalf("%d start requests, want the refused one and one without LoreJob", len(starts))
	}
	if got := attrNames(starts[1]); got[AttrJob.GetName()] || !got[AttrKind.GetName()] || !got[AttrSite.GetName()] || !got[AttrTenant.GetName()] {
		t.Fatalf("second start's attributes %v: want the older ones without LoreJob", got)
	}
	starts = nil
	if _, err := StartWithMeta(st, JobMeta{Kind: KindReindex, TenantID: 1}, client.StartWorkflowOptions{ID: "reindex-1"}, fakeNamespace(older, &starts)); err != nil {
		t.Fatal(err)
	}
	if len(starts) != 1 || attrNames(starts[0])[AttrJob.GetName()] || !attrNames(starts[0])[AttrKind.GetName()] {
		t.Fatalf("later start: %d requests, attributes %v", len(starts), attrNames(starts[0]))
	}

	all := map[string]bool{}
	for name := range SearchAttributeTypes {
		all[name] = true
	}
	for _, tc := range []struct {
		kind string
		job  bool
	}{{KindChat, false}, {KindKefuSync, false}, {KindVectorizeDocument, true}, {KindImport, true}} {
		starts = nil
		if _, err := StartWithMeta(NewStarter(nil), JobMeta{Kind: tc.kind}, client.StartWorkflowOptions{}, fakeNamespace(all, &starts)); err != nil {
			t.Fatal(err)
		}
		v, ok := starts[0].TypedSearchAttributes.GetBool(AttrJob)
		if len(starts) != 1 || !ok || v != tc.job {
			t.Errorf("%s: %d starts, LoreJob %v (set %v), want %v", tc.kind, len(starts), v, ok, tc.job)
		}
	}
}
