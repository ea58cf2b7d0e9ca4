package db

import (
	"context"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// ChatSessionFilter is the client query of a member's chat sessions.
type ChatSessionFilter struct {
	MemberID string // required by the API; matched exactly
	// OwnerHash and OwnerMemberHash, when either is set, keep the sessions
	// of that owner secret or of that strong member id (the client API
	// always sets one).
	OwnerHash, OwnerMemberHash string
	SiteID                     int64  // 0: any site
	TenantID                   int64  // 0: any tenant
	Keyword                    string // case-insensitive substring of title or last_message
	// NoPasswordSites drops sessions of sites that need an access password
	// or are private (is_public=false): lists not scoped to one site, and so
	// without its access token.
	NoPasswordSites bool
	Limit, Offset   int
}

// ListChatSessions returns a page of sessions, most recently updated first,
// and the total.
func (d *DB) ListChatSessions(ctx context.Context, f ChatSessionFilter) ([]models.ChatSession, int, error) {
	var rows []models.ChatSession
	q := d.NewSelect().Model(&rows).Where("member_id = ?", f.MemberID)
	q = sessionScope(d, q.QueryBuilder(), f).Unwrap().(*bun.SelectQuery)
	if f.Keyword != "" {
		op, kw := d.LikeOp(), Like(f.Keyword)
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("title "+op+" ? ESCAPE '\\'", kw).
				WhereOr("last_message "+op+" ? ESCAPE '\\'", kw)
		})
	}
	n, err := q.OrderExpr("updated_at DESC, id DESC").Limit(int64(f.Limit)).Offset(int64(f.Offset)).ScanAndCount(ctx)
	if rows == nil {
		rows = []models.ChatSession{}
	}
	return rows, int(n), Classify(err)
}

// sessionScope narrows a query of chat sessions to the filter's owner, site,
// tenant and unlocked sites (the member is matched by the caller).
func sessionScope(d *DB, q bun.QueryBuilder, f ChatSessionFilter) bun.QueryBuilder {
	switch {
	case f.OwnerHash != "" && f.OwnerMemberHash != "":
		q = q.Where("(owner_hash = ? OR owner_member_hash = ?)", f.OwnerHash, f.OwnerMemberHash)
	case f.OwnerHash != "":
		q = q.Where("owner_hash = ?", f.OwnerHash)
	case f.OwnerMemberHash != "":
		q = q.Where("owner_member_hash = ?", f.OwnerMemberHash)
	}
	if f.SiteID > 0 {
		q = q.Where("site_id = ?", f.SiteID)
	}
	if f.TenantID > 0 {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if f.NoPasswordSites {
		locked := d.NewSelect().Model((*models.Site)(nil)).Column("id").
			WhereOr("requires_password = ?", true).WhereOr("is_public = ?", false)
		q = q.Where("(site_id IS NULL OR site_id NOT IN (?))", locked)
	}
	return q
}

// ChatThreadMessages returns the stored messages of a thread in order.
func (d *DB) ChatThreadMessages(ctx context.Context, threadID string) ([]models.ChatMessage, error) {
	var rows []models.ChatMessage
	err := d.NewSelect().Model(&rows).Where("thread_id = ?", threadID).OrderExpr("position ASC, id ASC").Scan(ctx)
	return rows, Classify(err)
}

// ChatMessageBySeq returns the assistant message of a thread with the given
// message_seq (0-based among the thread's assistant rows with content).
func (d *DB) ChatMessageBySeq(ctx context.Context, threadID string, seq int) (*models.ChatMessage, error) {
	m := new(models.ChatMessage)
	err := d.NewSelect().Model(m).Where("thread_id = ?", threadID).Where("message_seq = ?", seq).
		OrderExpr("position ASC, id ASC").Limit(1).Scan(ctx)
	return m, Classify(err)
}

// ThreadToolResult returns a tool result of the thread; one stored under
// another thread is ErrNotFound.
func (d *DB) ThreadToolResult(ctx context.Context, threadID, toolCallID string) (*models.ToolResult, error) {
	r := new(models.ToolResult)
	err := d.NewSelect().Model(r).Where("tool_call_id = ?", toolCallID).Where("thread_id = ?", threadID).Scan(ctx)
	return r, Classify(err)
}

// DeleteChatSession deletes the member's session of a thread together with
// its messages, tool results and feedback, in one transaction; the session
// row holds the conversation memory (summary), so that goes too. A thread
// that does not exist or belongs to another member or owner secret is
// ErrNotFound and nothing is deleted.
func (d *DB) DeleteChatSession(ctx context.Context, threadID, memberID, ownerHash string) error {
	return d.deleteThread(ctx, threadID, "member_id = ? AND owner_hash = ?", memberID, ownerHash)
}

// deleteThread deletes the session of a thread that also matches cond (with
// args) together with its messages, tool results and feedback, in one
// transaction; no such session is ErrNotFound and nothing is deleted.
func (d *DB) deleteThread(ctx context.Context, threadID, cond string, args ...any) error {
	d.fresh.drop(threadID)
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*models.ChatSession)(nil)).
			Where("thread_id = ?", threadID).Where(cond, args...).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		for _, m := range []any{(*models.ChatMessage)(nil), (*models.ToolResult)(nil), (*models.Feedback)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("thread_id = ?", threadID).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteMemberChatSessions deletes every session of f.MemberID that the
// rest of f admits (owner, site, unlocked sites; keyword and paging are
// ignored) with their messages, tool results and feedback, in one
// transaction, and returns the number of sessions deleted.
func (d *DB) DeleteMemberChatSessions(ctx context.Context, f ChatSessionFilter) (int, error) {
	var deleted int
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		threads := tx.NewSelect().Model((*models.ChatSession)(nil)).Column("thread_id").Where("member_id = ?", f.MemberID)
		threads = sessionScope(d, threads.QueryBuilder(), f).Unwrap().(*bun.SelectQuery)
		for _, m := range []any{(*models.ChatMessage)(nil), (*models.ToolResult)(nil), (*models.Feedback)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("thread_id IN (?)", threads).Exec(ctx); err != nil {
				return err
			}
		}
		del := tx.NewDelete().Model((*models.ChatSession)(nil)).Where("member_id = ?", f.MemberID)
		res, err := sessionScope(d, del.QueryBuilder(), f).Unwrap().(*bun.DeleteQuery).Exec(ctx)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		deleted = int(n)
		return nil
	})
	return deleted, err
}

// UpsertFeedback records a member's rating of a message: one row per
// (chat_message_id, member_id), replaced on a repeated rating. fb.ID and
// fb.CreatedAt are set from the stored row.
func (d *DB) UpsertFeedback(ctx context.Context, fb *models.Feedback) error {
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if d.Postgres() {
			// Serialise concurrent ratings of one message (SQLite transactions
			// already take the write lock when they begin).
			if _, err := tx.NewSelect().Model((*models.ChatMessage)(nil)).Column("id").
				Where("chat_message_id = ?", fb.ChatMessageID).For("UPDATE").Exec(ctx); err != nil {
				return err
			}
		}
		var existing []models.Feedback
		if err := tx.NewSelect().Model(&existing).Where("chat_message_id = ?", fb.ChatMessageID).
			Where("member_id = ?", fb.MemberID).OrderExpr("id ASC").Scan(ctx); err != nil {
			return err
		}
		if len(existing) == 0 {
			fb.ID = 0
			fb.CreatedAt = time.Now().UTC()
			_, err := tx.NewInsert().Model(fb).Exec(ctx)
			return err
		}
		fb.ID, fb.CreatedAt = existing[0].ID, existing[0].CreatedAt
		if _, err := tx.NewUpdate().Model(fb).Column("thread_id", "rating", "reason").WherePK().Exec(ctx); err != nil {
			return err
		}
		if len(existing) > 1 {
			// Duplicates left by an older writer: keep the first row only.
			_, err := tx.NewDelete().Model((*models.Feedback)(nil)).Where("chat_message_id = ?", fb.ChatMessageID).
				Where("member_id = ?", fb.MemberID).Where("id <> ?", fb.ID).Exec(ctx)
			return err
		}
		return nil
	})
}
