package api

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
)

// Bootstrap creates the default tenant and, when no user exists, the first
// admin from LORE_ADMIN_EMAIL / LORE_ADMIN_PASSWORD; a generated password is
// printed once to out.
func Bootstrap(ctx context.Context, d *deps.Deps, out io.Writer) error {
	tid, err := d.DB.EnsureDefaultTenant(ctx)
	if err != nil {
		return err
	}
	n, err := d.DB.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	pw, generated := d.Cfg.AdminPassword, false
	if pw == "" {
		pw, generated = TempPassword(), true
	}
	hash, err := HashPassword(pw)
	if err != nil {
		return err
	}
	u := &models.User{TenantID: tid, Name: "Administrator", Email: d.Cfg.AdminEmail, PasswordHash: hash,
		Role: models.RoleAdmin, Status: models.UserActive}
	if err := d.DB.CreateUser(ctx, u, nil); err != nil {
		if errors.Is(err, db.ErrConflict) {
			return nil // another process created it first
		}
		return err
	}
	if generated {
		fmt.Fprintf(out, "\nFirst admin created: %s / %s  (shown once; change it with PUT /admin/api/v1/users/%d/password)\n", u.Email, pw, u.ID)
	} else {
		fmt.Fprintf(out, "\nFirst admin created: %s (password from LORE_ADMIN_PASSWORD)\n", u.Email)
	}
	return nil
}
