package deps

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/sealed"
)

// SealSecrets gives the database the key of LORE_SECRET_KEY, so every
// provider secret it writes is encrypted, and runs the startup pass: rows an
// older version stored in clear are sealed, and a key that does not open the
// stored secrets stops the start with an error naming LORE_SECRET_KEY.
func SealSecrets(ctx context.Context, database *db.DB, cfg *config.Config, log *slog.Logger) error {
	box, err := sealed.New(cfg.SecretKey)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	database.Secrets = box
	n, err := database.SealStoredSecrets(ctx)
	if err != nil {
		return err
	}
	if n > 0 && log != nil {
		log.Info("stored provider secrets encrypted", "rows", n)
	}
	return nil
}
