package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/feature"
)

// ErrNotOwner is returned when a thread belongs to another member or site.
var ErrNotOwner = errors.New("thread belongs to another member or site")

// BeginTurn is the input of StartTurn.
type BeginTurn struct {
	ThreadID string // existing or new thread
	TenantID int64
	SiteID   int64
	MemberID string
	// OwnerHash is the owner secret's hash of a client API turn ('' for
	// messenger turns): a new session keeps it, an existing one must have it.
	OwnerHash string
	// OwnerMemberHash is the strong member id's hash of a client API turn
	// ('' for a weak or no member id, and for messenger turns): a new
	// session keeps it, and it continues an existing session that has it.
	OwnerMemberHash string
	Source          string
	UserText        string
	History         []HistoryMessage // earlier messages to seed a new thread with (chat-completions callers)
	New             bool             // the thread id was just generated: no session to look up
	// Existing: the caller named a thread it must have created before (the
	// client API's previous_response_id): no session is created under a
	// caller-chosen id; an unknown one is ErrNotFound.
	Existing bool
}

// HistoryMessage is a prior message supplied by a caller.
type HistoryMessage struct {
	Role, Content string
}

// TurnStart is what a new turn starts from.
type TurnStart struct {
	Session *models.ChatSession
	Turn    int
}

// StartTurn creates or updates the session, numbers the turn and writes the
// user message, in one transaction. A thread of another member or site is
// refused with ErrNotOwner, and so is one opened under another owner secret.
func (d *DB) StartTurn(ctx context.Context, in BeginTurn) (*TurnStart, error) {
	if in.New && d.Dialect().Name() == dialect.PG {
		return d.startNewThread(ctx, in)
	}
	var out TurnStart
	var written []models.ChatMessage
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		now := time.Now().UTC()
		s := new(models.ChatSession)
		exists := false
		if !in.New {
			err := tx.NewSelect().Model(s).Where("thread_id = ?", in.ThreadID).Scan(ctx)
			switch {
			case Classify(err) == ErrNotFound:
				if in.Existing {
					return ErrNotFound
				}
			case err != nil:
				return err
			default:
				owner := s.OwnerHash == in.OwnerHash || in.OwnerMemberHash != "" && s.OwnerMemberHash == in.OwnerMemberHash
				if s.MemberID != in.MemberID || !owner || s.TenantID != in.TenantID || !sameSite(s.SiteID, in.SiteID) {
					return ErrNotOwner
				}
				exists = true
			}
		}
		if !exists {
			s = newSession(in, now)
		}
		rows := nextTurn(s, in, now)
		if exists {
			if _, err := tx.NewUpdate().Model(s).Column("turn_count", "message_count", "last_message", "last_message_role", "updated_at").
				WherePK().Exec(ctx); err != nil {
				return err
			}
		} else if _, err := tx.NewInsert().Model(s).Exec(ctx); err != nil {
			return err
		}
		if err := insertRows(ctx, tx, rows, ""); err != nil {
			return err
		}
		out = TurnStart{Session: s, Turn: s.TurnCount}
		written = rows
		return nil
	})
	if err != nil {
		return nil, err
	}
	if in.New {
		d.fresh.put(in.ThreadID, written, time.Now())
	} else {
		d.fresh.drop(in.ThreadID)
	}
	return &out, nil
}

// startNewThread is StartTurn for a thread id just generated, on
// PostgreSQL: the session and its first messages in one statement (two
// inserts in one WITH), one round trip where the transaction took four
// (BEGIN, two INSERTs, COMMIT). A statement is atomic on its own.
func (d *DB) startNewThread(ctx context.Context, in BeginTurn) (*TurnStart, error) {
	now := time.Now().UTC()
	s := newSession(in, now)
	rows := nextTurn(s, in, now)
	err := d.NewRaw("WITH s AS (?), m AS (?) SELECT id FROM s",
		d.NewInsert().Model(s).Returning("id"), d.NewInsert().Model(&rows)).Scan(ctx, &s.ID)
	if err != nil {
		return nil, Classify(err)
	}
	d.fresh.put(in.ThreadID, rows, now)
	return &TurnStart{Session: s, Turn: s.TurnCount}, nil
}

// newSession is the session a turn on a new thread opens.
func newSession(in BeginTurn, now time.Time) *models.ChatSession {
	var siteID *int64 // a turn of no site (SiteID 0) opens a session of no site
	if in.SiteID != 0 {
		siteID = &in.SiteID
	}
	s := &models.ChatSession{ThreadID: in.ThreadID, TenantID: in.TenantID, SiteID: siteID, MemberID: in.MemberID,
		OwnerHash: in.OwnerHash, OwnerMemberHash: in.OwnerMemberHash, Title: truncRunes(in.UserText, 50), Source: in.Source, CreatedAt: now}
	if s.Title == "" {
		s.Title = "New conversation"
	}
	return s
}

// nextTurn numbers the next turn of s and returns its user-side messages
// (any history, then the user message), with s's counters updated.
func nextTurn(s *models.ChatSession, in BeginTurn, now time.Time) []models.ChatMessage {
	s.TurnCount++
	pos := TurnPosition(s.TurnCount, false)
	rows := make([]models.ChatMessage, 0, len(in.History)+1)
	for i, h := range in.History {
		rows = append(rows, models.ChatMessage{ThreadID: s.ThreadID, Turn: s.TurnCount, Position: pos + i,
			ChatMessageID: fmt.Sprintf("%s-t%d-h%d", s.ThreadID, s.TurnCount, i), Role: h.Role, Content: h.Content,
			ToolCalls: "[]", Extra: "{}", CreatedAt: now})
	}
	rows = append(rows, models.ChatMessage{ThreadID: s.ThreadID, Turn: s.TurnCount, Position: pos + len(in.History),
		ChatMessageID: fmt.Sprintf("%s-t%d-u", s.ThreadID, s.TurnCount), Role: "user", Content: in.UserText,
		ToolCalls: "[]", Extra: "{}", CreatedAt: now})
	for _, r := range rows {
		if isReaderMessage(r.Role, r.Content) {
			s.MessageCount++
		}
	}
	s.LastMessage, s.LastMessageRole, s.UpdatedAt = truncRunes(in.UserText, 200), "user", now
	return rows
}

// sameSite: a session's site (nil: a session of no site) is the turn's
// (0: a turn of no site). A thread never moves between sites, or from the
// tenant-wide search into one site or back.
func sameSite(session *int64, site int64) bool {
	if session == nil {
		return site == 0
	}
	return *session == site
}

// TurnPosition is the first message position of a turn's user side
// (history and user message) or assistant side. Positions derive from the turn
// number, so a late persist of turn n never lands after turn n+1's messages.
func TurnPosition(turn int, assistant bool) int {
	p := turn * 10000
	if assistant {
		p += 5000
	}
	return p
}

// ChatSessionByThread returns a session by thread id.
func (d *DB) ChatSessionByThread(ctx context.Context, threadID string) (*models.ChatSession, error) {
	return selectOne[models.ChatSession](ctx, d, "thread_id = ?", threadID)
}

// ConversationContext is the stored memory a model turn starts from.
type ConversationContext struct {
	Summary string
	// Messages are those at or after the summary cut-off, in order, with
	// only Position, Role and Content read: what a model call and the
	// summarizer use (the other columns, sources JSON above all, were read
	// twice per turn for nothing).
	Messages []models.ChatMessage
}

// LoadContext returns the summary and the messages after it.
//
// Every model call of a turn reads it, so it is one statement: the messages
// joined with their session's summary; only a thread without messages after
// the cut-off needs a second read (of the session, to tell it from a missing
// one).
func (d *DB) LoadContext(ctx context.Context, threadID string) (*ConversationContext, error) {
	if conv, ok := d.fresh.take(threadID, time.Now()); ok {
		return conv, nil
	}
	var rows []struct {
		models.ChatMessage `bun:",extend"`
		SessionSummary     string `bun:"session_summary"`
	}
	err := d.NewRaw(`SELECT m.position, m.role, m.content, s.summary AS session_summary FROM chat_messages AS m
JOIN chat_sessions AS s ON s.thread_id = m.thread_id
WHERE m.thread_id = ? AND m.position >= s.summary_up_to ORDER BY m.position`, threadID).Scan(ctx, &rows)
	if err != nil {
		return nil, Classify(err)
	}
	if len(rows) == 0 {
		s, err := d.ChatSessionByThread(ctx, threadID)
		if err != nil {
			return nil, err
		}
		return &ConversationContext{Summary: s.Summary}, nil
	}
	out := &ConversationContext{Summary: rows[0].SessionSummary, Messages: make([]models.ChatMessage, len(rows))}
	for i := range rows {
		out.Messages[i] = rows[i].ChatMessage
	}
	return out, nil
}

// ToolResultContents returns the stored contents of a thread's tool calls by
// id.
func (d *DB) ToolResultContents(ctx context.Context, threadID string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.ToolResult
	err := d.NewSelect().Model(&rows).Where("thread_id = ?", threadID).Where("tool_call_id IN (?)", bun.List(ids)).Scan(ctx)
	for _, r := range rows {
		out[r.ToolCallID] = r.Content
	}
	return out, Classify(err)
}

// SaveToolResult stores a tool call's result under its thread; a retry
// overwrites it, another thread's call of the same id is another row.
func (d *DB) SaveToolResult(ctx context.Context, r *models.ToolResult) error {
	r.CreatedAt = time.Now().UTC()
	_, err := d.NewInsert().Model(r).On("CONFLICT (thread_id, tool_call_id) DO UPDATE").
		Set("content = EXCLUDED.content").Exec(ctx)
	return Classify(err)
}

// TurnRow is one message of a finished turn to persist.
type TurnRow struct {
	Role       string
	Content    string
	ToolCalls  string // JSON
	ToolCallID string
	Sources    string // JSON (final assistant row)
	Extra      string // JSON
	ElapsedMS  int64
}

// PersistTurn writes the assistant side of a turn. Rows get deterministic
// chat_message_ids and are inserted with ON CONFLICT DO NOTHING, and the
// session counters are recomputed, so a retried activity writes nothing twice.
//
// The session's message_count becomes the thread's reader messages
// (isReaderMessage). It returns the thread's rows after the write, tool
// rows included (what summarizing counts), or -1 when it wrote nothing
// (session gone, turn stored by an earlier attempt).
func (d *DB) PersistTurn(ctx context.Context, threadID string, turn int, rows []TurnRow, sourceOffset int) (int, error) {
	d.fresh.drop(threadID)
	pos := TurnPosition(turn, true)
	now := time.Now().UTC()
	// MessageSeq holds each answer row's offset among the turn's answers;
	// the thread's count of earlier answers is added when writing.
	msgs := make([]models.ChatMessage, 0, len(rows))
	last, seq := "", 0
	for i, r := range rows {
		m := models.ChatMessage{ThreadID: threadID, Turn: turn, Position: pos + i,
			ChatMessageID: fmt.Sprintf("%s-t%d-m%d", threadID, turn, i), Role: r.Role, Content: r.Content,
			ToolCalls: orJSON(r.ToolCalls, "[]"), ToolCallID: r.ToolCallID, Sources: r.Sources,
			Extra: orJSON(r.Extra, "{}"), ElapsedMS: r.ElapsedMS, CreatedAt: now.Add(time.Duration(i) * time.Microsecond)}
		if r.Role == "assistant" && r.Content != "" {
			n := seq
			m.MessageSeq = &n
			seq++
			last = r.Content
		}
		msgs = append(msgs, m)
	}
	if d.Dialect().Name() == dialect.PG && len(msgs) > 0 {
		return d.persistTurnPG(ctx, threadID, turn, pos, msgs, last, sourceOffset, now)
	}
	count := -1
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// One round trip for the three facts the write depends on.
		var st struct {
			Sessions int `bun:"sessions"`
			Existing int `bun:"existing"`
			Seq      int `bun:"seq"`
		}
		if err := tx.NewRaw(`SELECT `+persistFacts, threadID, threadID, turn, pos, threadID).Scan(ctx, &st); err != nil {
			return err
		}
		if st.Sessions == 0 {
			return nil // the session was deleted while the turn ran: store nothing
		}
		if st.Existing > 0 {
			return nil // already persisted by an earlier attempt
		}
		for i := range msgs {
			if msgs[i].MessageSeq != nil {
				*msgs[i].MessageSeq += st.Seq
			}
		}
		if err := insertRows(ctx, tx, msgs, "CONFLICT (chat_message_id) DO NOTHING"); err != nil {
			return err
		}
		// The counts are recomputed and returned by the update itself: one
		// round trip instead of counts and an update.
		q := tx.NewUpdate().Model((*models.ChatSession)(nil)).
			Set("message_count = (SELECT COUNT(*) FROM chat_messages AS m WHERE m.thread_id = ? AND "+visibleMessage+")", threadID).
			Set("source_offset = ?", sourceOffset).Set("updated_at = ?", now).Where("thread_id = ?", threadID).
			Returning("(SELECT COUNT(*) FROM chat_messages WHERE thread_id = ?)", threadID)
		if last != "" {
			q = q.Set("last_message = ?", truncRunes(last, 200)).Set("last_message_role = 'assistant'")
		}
		err := q.Scan(ctx, &count)
		if errors.Is(err, sql.ErrNoRows) {
			count = -1 // the session went between the check and the update
			return nil
		}
		return err
	})
	if err != nil {
		return -1, err
	}
	return count, nil
}

// persistFacts are the three facts a persist depends on: whether the
// session exists, whether the turn's answer is already stored, and how many
// answers the thread holds (message_seq of the next).
const persistFacts = `(SELECT COUNT(*) FROM chat_sessions WHERE thread_id = ?) AS sessions,
  (SELECT COUNT(*) FROM chat_messages WHERE thread_id = ? AND turn = ? AND position >= ?) AS existing,
  (SELECT COUNT(*) FROM chat_messages WHERE thread_id = ? AND message_seq IS NOT NULL) AS seq`

// persistTurnPG is PersistTurn on PostgreSQL in one statement: the facts,
// the rows (inserted only when the session exists and the turn is not
// stored) and the session update returning the new count, where the
// transaction took five round trips (BEGIN, facts, INSERT, UPDATE, COMMIT).
// The update's counts of the thread's rows do not see the rows inserted by
// the same statement, so theirs are added.
func (d *DB) persistTurnPG(ctx context.Context, threadID string, turn, pos int, msgs []models.ChatMessage, last string,
	sourceOffset int, now time.Time) (int, error) {
	var b strings.Builder
	args := make([]any, 0, 13*len(msgs)+12)
	b.WriteString(`WITH v (thread_id, turn, position, chat_message_id, message_seq, role, content, tool_calls, tool_call_id,
  sources, extra, elapsed_ms, created_at) AS (VALUES `)
	for i, m := range msgs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?::bigint, ?::bigint, ?, ?::bigint, ?, ?, ?, ?, ?, ?, ?::bigint, ?::timestamptz)")
		args = append(args, m.ThreadID, m.Turn, m.Position, m.ChatMessageID, m.MessageSeq, m.Role, m.Content,
			m.ToolCalls, m.ToolCallID, m.Sources, m.Extra, m.ElapsedMS, m.CreatedAt)
	}
	b.WriteString(`),
st AS (SELECT ` + persistFacts + `),
ins AS (INSERT INTO chat_messages (thread_id, turn, position, chat_message_id, message_seq, role, content, tool_calls,
    tool_call_id, sources, extra, elapsed_ms, created_at)
  SELECT v.thread_id, v.turn, v.position, v.chat_message_id, v.message_seq + st.seq, v.role, v.content, v.tool_calls,
    v.tool_call_id, v.sources, v.extra, v.elapsed_ms, v.created_at
  FROM v, st WHERE st.sessions > 0 AND st.existing = 0
  ON CONFLICT (chat_message_id) DO NOTHING RETURNING role, content)
UPDATE chat_sessions SET message_count = (SELECT COUNT(*) FROM chat_messages AS m WHERE m.thread_id = ? AND ` + visibleMessage + `)
    + (SELECT COUNT(*) FROM ins AS m WHERE ` + visibleMessage + `),
  source_offset = ?, updated_at = ?::timestamptz`)
	args = append(args, threadID, threadID, turn, pos, threadID, threadID, sourceOffset, now)
	if last != "" {
		b.WriteString(", last_message = ?, last_message_role = 'assistant'")
		args = append(args, truncRunes(last, 200))
	}
	b.WriteString(" WHERE thread_id = ? AND (SELECT st.sessions > 0 AND st.existing = 0 FROM st)" +
		" RETURNING (SELECT COUNT(*) FROM chat_messages WHERE thread_id = ?) + (SELECT COUNT(*) FROM ins)")
	args = append(args, threadID, threadID)
	count := -1
	err := d.NewRaw(b.String(), args...).Scan(ctx, &count)
	if errors.Is(err, sql.ErrNoRows) {
		return -1, nil // session gone, or the turn stored by an earlier attempt
	}
	if err != nil {
		return -1, Classify(err)
	}
	return count, nil
}

// SaveSummary stores the conversation memory covering messages before upTo.
func (d *DB) SaveSummary(ctx context.Context, threadID, summary string, upTo int) error {
	d.fresh.drop(threadID)
	_, err := d.NewUpdate().Model((*models.ChatSession)(nil)).Set("summary = ?", summary).
		Set("summary_up_to = ?", upTo).Where("thread_id = ?", threadID).Exec(ctx)
	return Classify(err)
}

// SiteByAPIKeyHash returns the site of an active (not revoked) bot API key.
func (d *DB) SiteByAPIKeyHash(ctx context.Context, hash string) (*models.Site, error) {
	k := new(models.SiteAPIKey)
	if err := d.NewSelect().Model(k).Where("key_hash = ? AND revoked_at IS NULL", hash).Scan(ctx); err != nil {
		return nil, Classify(err)
	}
	return d.GetSite(ctx, k.SiteID)
}

func orJSON(s, def string) string {
	if s == "" || !json.Valid([]byte(s)) {
		return def
	}
	return s
}

func truncRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// SearchableDocuments returns, for the ids that are published, vectorized
// (completed) documents of the site, their content version: only those may be
// cited, and only chunks of that version.
func (d *DB) SearchableDocuments(ctx context.Context, siteID int64, ids []int64) (map[int64]int64, error) {
	var rows []models.Document
	err := d.NewSelect().Model(&rows).Column("id", "content_version").
		Where("site_id = ? AND id IN (?) AND status = ? AND vector_status = ?", siteID, bun.List(ids), models.DocPublished, models.VecCompleted).
		Scan(ctx)
	out := make(map[int64]int64, len(rows))
	for _, r := range rows {
		out[r.ID] = r.ContentVersion
	}
	return out, Classify(err)
}

// insertRows inserts rows in one statement where the dialect writes DEFAULT
// for a zero value with a `default:` tag (PostgreSQL), else one at a time:
// bun's multi-row INSERT on SQLite leaves out, for every row, a column with a
// `default:` tag whose value is zero in the first row, so mixed rows must not
// be inserted in one statement there.
func insertRows[T any](ctx context.Context, db bun.IDB, rows []T, on string) error {
	if len(rows) == 0 {
		return nil
	}
	if db.Dialect().Features().Has(feature.DefaultPlaceholder) {
		q := db.NewInsert().Model(&rows)
		if on != "" {
			q = q.On(on)
		}
		_, err := q.Exec(ctx)
		return err
	}
	for i := range rows {
		q := db.NewInsert().Model(&rows[i])
		if on != "" {
			q = q.On(on)
		}
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
