package workflows

import (
	"time"

	"github.com/lorekb/lore/activities"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// SignalKefuSync asks a running KefuSync for one more pull; its value is the
// Token of the kf_msg_or_event callback that triggered it. The API sends it
// with SignalWithStart, so callbacks arriving during a pull coalesce into a
// single extra pull and there is never a parallel pull of one account.
const SignalKefuSync = "kefu_sync"

// KefuSyncInput names the customer-service account whose messages a
// callback announced, with the callback's Token.
type KefuSyncInput struct {
	SiteID   int64
	OpenKfID string
	Token    string
}

const (
	// kefuMaxPages bounds the pages of one pull; more are fetched by the
	// next one.
	kefuMaxPages = 50
	// kefuHistoryLimit is the history length after which a long-running
	// sync continues as new.
	kefuHistoryLimit = 5000
)

var kefuOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
		MaximumInterval: 30 * time.Second, MaximumAttempts: 5,
		NonRetryableErrorTypes: []string{activities.ErrTypeMessengerPermanent}},
}

// KefuSync pulls an account's new messages (sync_msg) and starts one chat
// run per new customer text message, again for as long as further
// callbacks arrived during the previous pull.
func KefuSync(ctx workflow.Context, in KefuSyncInput) error {
	ch := workflow.GetSignalChannel(ctx, SignalKefuSync)
	drain := func() bool {
		got := false
		var token string
		for ch.ReceiveAsync(&token) {
			got = true
			if token != "" {
				in.Token = token
			}
		}
		return got
	}
	for {
		drain()
		err := kefuPull(ctx, in)
		if err != nil {
			workflow.GetLogger(ctx).Warn("kefu sync failed", "site_id", in.SiteID, "open_kfid", in.OpenKfID, "err", err)
		}
		if !drain() {
			return err
		}
		if workflow.GetInfo(ctx).GetCurrentHistoryLength() > kefuHistoryLimit {
			return workflow.NewContinueAsNewError(ctx, KefuSync, in)
		}
	}
}

// kefuPull fetches pages until the platform has no more, starting a chat
// run per message and storing the cursor after each page. A message whose
// turn cannot be stored is skipped (logged), so one bad message never
// blocks the account.
func kefuPull(ctx workflow.Context, in KefuSyncInput) error {
	var a *activities.Messenger
	actx := workflow.WithActivityOptions(ctx, kefuOptions)
	log := workflow.GetLogger(ctx)
	cursor := ""
	for range kefuMaxPages {
		var page activities.KefuPage
		err := workflow.ExecuteActivity(actx, a.SyncKefu, activities.KefuSyncInput{SiteID: in.SiteID, OpenKfID: in.OpenKfID,
			Token: in.Token, Cursor: cursor}).Get(ctx, &page)
		if err != nil {
			return err
		}
		for _, msg := range page.Messages {
			var turn activities.KefuTurn
			if err := workflow.ExecuteActivity(actx, a.BeginKefuTurn, activities.KefuTurnInput{SiteID: in.SiteID, Msg: msg}).
				Get(ctx, &turn); err != nil {
				log.Error("kefu message skipped", "msg_id", msg.MsgID, "err", err)
				continue
			}
			if turn.Started {
				startKefuRun(ctx, turn)
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		if err := workflow.ExecuteActivity(actx, a.SaveKefuCursor, page.CursorKey, page.NextCursor).Get(ctx, nil); err != nil {
			return err
		}
		cursor = page.NextCursor
		if !page.HasMore {
			return nil
		}
	}
	return nil
}

// startKefuRun starts the chat run of a stored turn as an abandoned child
// (it outlives the sync) and waits until it has started.
func startKefuRun(ctx workflow.Context, t activities.KefuTurn) {
	reply := t.Reply
	in := ChatRunInput{ChatRunSpec: t.ChatRunSpec, Reply: &reply}
	// No execution timeout, as for a run the API starts: every step of a
	// run is bounded by the stream deadline or a start-to-close limit.
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            ChatRunID(t.ThreadID, t.SessionID, t.Turn),
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
	})
	f := workflow.ExecuteChildWorkflow(cctx, ChatWorkflowName, in)
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("kefu chat run not started", "thread_id", t.ThreadID, "turn", t.Turn, "err", err)
	}
}
