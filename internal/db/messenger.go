package db

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// MessengerCursor is the persisted sync_msg position of one customer-service
// (kefu) account: the next pull starts from NextCursor, so a message is
// fetched once even across workflow runs and restarts.
type MessengerCursor struct {
	bun.BaseModel `bun:"table:messenger_cursors"`
	Key           string    `bun:"cursor_key,pk"`
	NextCursor    string    `bun:"next_cursor,notnull,default:''"`
	UpdatedAt     time.Time `bun:"updated_at,notnull"`
}

// MarkMessageProcessed records that the messenger message (channel, msgID)
// is being handled and reports whether this call recorded it: false means
// an earlier delivery of the same message already did, and the caller must
// do nothing more. The insert is ON CONFLICT DO NOTHING, so concurrent
// redeliveries race safely and exactly one of them wins.
func (d *DB) MarkMessageProcessed(ctx context.Context, channel, msgID string) (bool, error) {
	row := &models.ProcessedMessage{Channel: channel, MsgID: msgID, CreatedAt: time.Now().UTC()}
	res, err := d.NewInsert().Model(row).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return false, Classify(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, Classify(err)
	}
	return n == 1, nil
}

// ForgetProcessedMessage removes the mark MarkMessageProcessed set, used
// when handling failed before anything was started, so that a redelivery
// of the message is processed instead of being dropped as a duplicate.
func (d *DB) ForgetProcessedMessage(ctx context.Context, channel, msgID string) error {
	_, err := d.NewDelete().Model((*models.ProcessedMessage)(nil)).
		Where("channel = ? AND msg_id = ?", channel, msgID).Exec(ctx)
	return Classify(err)
}

// MessengerCursor returns the stored sync cursor under key, or "" when no
// pull has stored one yet.
func (d *DB) MessengerCursor(ctx context.Context, key string) (string, error) {
	var row MessengerCursor
	err := d.NewSelect().Model(&row).Where("cursor_key = ?", key).Scan(ctx)
	if err != nil {
		if err = Classify(err); errors.Is(err, ErrNotFound) {
			return "", nil
		}
		return "", err
	}
	return row.NextCursor, nil
}

// SaveMessengerCursor stores the sync cursor under key (insert or update).
func (d *DB) SaveMessengerCursor(ctx context.Context, key, cursor string) error {
	row := &MessengerCursor{Key: key, NextCursor: cursor, UpdatedAt: time.Now().UTC()}
	_, err := d.NewInsert().Model(row).
		On("CONFLICT (cursor_key) DO UPDATE").
		Set("next_cursor = EXCLUDED.next_cursor").
		Set("updated_at = EXCLUDED.updated_at").
		Exec(ctx)
	return Classify(err)
}

// LatestMessengerThread returns the most recently updated chat thread of
// memberID on siteID with the given source whose thread id starts with
// prefix, or "" when there is none. Messenger users have no thread id of
// their own; this is how their next message finds the conversation to
// continue.
func (d *DB) LatestMessengerThread(ctx context.Context, siteID int64, memberID, source, prefix string) (string, error) {
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix)
	var thread string
	err := d.NewSelect().Model((*models.ChatSession)(nil)).Column("thread_id").
		Where("member_id = ? AND site_id = ? AND source = ?", memberID, siteID, source).
		Where(`thread_id LIKE ? ESCAPE '\'`, esc+"%").
		OrderExpr("updated_at DESC, id DESC").Limit(1).Scan(ctx, &thread)
	if err != nil {
		if err = Classify(err); errors.Is(err, ErrNotFound) {
			return "", nil
		}
		return "", err
	}
	return thread, nil
}
