package api

import (
	"crypto/rand"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

// Site API keys (EE) authenticate POST /v1/bot/chat/completions and
// GET /v1/bot/models for one site. A key is shown once, when it is created;
// only its SHA-256 (HashAPIKey) is stored, with a short prefix to recognise it.

// apiKeyPrefix starts every generated key; apiKeyRandLen base62 characters follow.
const (
	apiKeyPrefix  = "lore_"
	apiKeyRandLen = 32
	// apiKeyShown is how many leading characters are kept as the key's prefix.
	apiKeyShown = len(apiKeyPrefix) + 6
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// APIKeyCreate is the body of POST /sites/{id}/api-keys (optional).
type APIKeyCreate struct {
	Name string `json:"name" required:"false" validate:"max=100"`
}

// APIKeyResponse is a key as listed: never the key itself.
type APIKeyResponse struct {
	ID        int64      `json:"id"`
	SiteID    int64      `json:"site_id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// APIKeyCreated is the result of creating a key: the only time key is shown.
type APIKeyCreated struct {
	ID        int64     `json:"id"`
	SiteID    int64     `json:"site_id"`
	Name      string    `json:"name"`
	Prefix    string    `json:"prefix"`
	Key       string    `json:"key" doc:"shown once; store it now"`
	CreatedAt time.Time `json:"created_at"`
}

func (s *Server) apiKeyRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/sites/{id}/api-keys", Tag: "sites", Perm: SiteAdminUp, Created: true,
			Summary:     "EE: create a bot API key of the site (the key is returned once)",
			Description: "Use it as Authorization: Bearer <key> on /v1/bot/chat/completions. Only its hash is stored.",
			Body:        APIKeyCreate{}, Response: APIKeyCreated{}, Handler: s.createAPIKey},
		{Surface: Admin, Method: http.MethodGet, Path: "/sites/{id}/api-keys", Tag: "sites", Perm: SiteAdminUp,
			Summary:  "EE: list the site's bot API keys (without the keys), newest first",
			Response: []APIKeyResponse{}, Handler: s.listAPIKeys},
		{Surface: Admin, Method: http.MethodDelete, Path: "/sites/{id}/api-keys/{key_id}", Tag: "sites", Perm: SiteAdminUp,
			Summary: "EE: revoke a bot API key", Response: APIKeyResponse{}, Handler: s.revokeAPIKey},
	}
}

// newAPIKey returns a random key: the prefix and 32 base62 characters
// (about 190 bits).
func newAPIKey() (string, error) {
	var b strings.Builder
	b.WriteString(apiKeyPrefix)
	max := big.NewInt(int64(len(base62)))
	for range apiKeyRandLen {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b.WriteByte(base62[n.Int64()])
	}
	return b.String(), nil
}

func apiKeyResponse(k *models.SiteAPIKey) APIKeyResponse {
	return APIKeyResponse{ID: k.ID, SiteID: k.SiteID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt,
		RevokedAt: k.RevokedAt}
}

func (s *Server) createAPIKey(c *fiber.Ctx) error {
	st, err := s.adminSiteByID(c, SiteAdminUp)
	if err != nil {
		return err
	}
	var in APIKeyCreate
	if len(strings.TrimSpace(string(c.Body()))) > 0 {
		if err := bindJSON(c, &in); err != nil {
			return err
		}
	}
	key, err := newAPIKey()
	if err != nil {
		return err
	}
	k := &models.SiteAPIKey{SiteID: st.ID, Name: strings.TrimSpace(in.Name), Prefix: key[:apiKeyShown],
		KeyHash: HashAPIKey(key)}
	if err := s.d.DB.CreateSiteAPIKey(c.UserContext(), k); err != nil {
		return err
	}
	return created(c, APIKeyCreated{ID: k.ID, SiteID: k.SiteID, Name: k.Name, Prefix: k.Prefix, Key: key,
		CreatedAt: k.CreatedAt})
}

func (s *Server) listAPIKeys(c *fiber.Ctx) error {
	st, err := s.adminSiteByID(c, SiteAdminUp)
	if err != nil {
		return err
	}
	keys, err := s.d.DB.ListSiteAPIKeys(c.UserContext(), st.ID)
	if err != nil {
		return err
	}
	out := make([]APIKeyResponse, len(keys))
	for i := range keys {
		out[i] = apiKeyResponse(&keys[i])
	}
	return ok(c, out)
}

func (s *Server) revokeAPIKey(c *fiber.Ctx) error {
	st, err := s.adminSiteByID(c, SiteAdminUp)
	if err != nil {
		return err
	}
	keyID, err := pathInt(c, "key_id")
	if err != nil {
		return err
	}
	k, err := s.d.DB.RevokeSiteAPIKey(c.UserContext(), st.ID, keyID)
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("API key")
	}
	if err != nil {
		return err
	}
	return ok(c, apiKeyResponse(k))
}
