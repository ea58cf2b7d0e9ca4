package deps

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/lorekb/lore/internal/netguard"
)

// Guard is the outbound address policy of every configurable endpoint:
// LORE_ALLOWED_PROVIDER_HOSTS plus the host:port of each endpoint the
// operator set in the environment (CHAT_BASE_URL, EMBED_BASE_URL,
// RERANK_BASE_URL, S3_ENDPOINT). A malformed allow-list entry is logged and the policy
// stays strict.
func (d *Deps) Guard() *netguard.Policy {
	d.guardOnce.Do(func() {
		p, err := netguard.New(d.Cfg.AllowedProviderHosts)
		if err != nil {
			if d.Log != nil {
				d.Log.Error("LORE_ALLOWED_PROVIDER_HOSTS ignored", "err", err)
			}
			p, _ = netguard.New(nil)
		}
		for _, u := range []string{d.Cfg.ChatBaseURL, d.Cfg.EmbedBaseURL, d.Cfg.RerankBaseURL} {
			if u != "" {
				p.AllowURLHost(u)
			}
		}
		if ep := d.Cfg.S3Endpoint; ep != "" {
			scheme := "http://"
			if d.Cfg.S3UseSSL {
				scheme = "https://"
			}
			if !strings.Contains(ep, "://") {
				ep = scheme + ep
			}
			p.AllowURLHost(ep)
		}
		d.guard, d.guardClient = p, p.Client()
	})
	return d.guard
}

// GuardedClient is the HTTP client of model providers: every connection is
// checked by Guard at connect time.
func (d *Deps) GuardedClient() *http.Client {
	d.Guard()
	return d.guardClient
}

// endpoint identifies where a model section sends its key.
func endpoint(m ModelConfig) string {
	return strings.ToLower(strings.TrimSpace(m.Provider)) + " " + strings.TrimRight(strings.TrimSpace(m.BaseURL), "/")
}

// SameEndpoint reports whether two model sections send their key to the
// same provider and base URL.
func SameEndpoint(a, b ModelConfig) bool { return endpoint(a) == endpoint(b) }

// withoutEnvKey drops the platform's key from a tenant section aimed at
// another endpoint than the platform's (stored by an older version that
// copied the default key into tenant sections): an environment key is only
// ever sent to the environment's endpoint.
func withoutEnvKey(m, def ModelConfig) ModelConfig {
	if def.APIKey != "" && m.APIKey == def.APIKey && !SameEndpoint(m, def) {
		m.APIKey = ""
	}
	return m
}

// privateFile creates the SQLite file readable by its owner only (it holds
// password hashes and provider keys), or narrows an existing one to 0600;
// SQLite gives its -wal and -shm files the same mode.
func privateFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("database file: %w", err)
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("database file: %w", err)
	}
	return nil
}
