// Package config reads every setting of Lore from environment variables into one
// struct, so that defaults live in one place and README can list them all.
package config

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is the whole runtime configuration. Zero values are never used directly:
// Load fills every field from the environment or its default.
type Config struct {
	HTTPAddr  string // LORE_HTTP_ADDR
	PprofAddr string // LORE_PPROF_ADDR: Go profiler (net/http/pprof) listen address; empty: off
	// MetricsAddr (LORE_METRICS_ADDR): serve /metrics on this listener only,
	// away from the public API; empty: see MetricsPublic.
	MetricsAddr string
	// MetricsPublic (LORE_METRICS_PUBLIC): without LORE_METRICS_ADDR, serve
	// /metrics on LORE_HTTP_ADDR too; false (the default): the public
	// listener answers 404 for it.
	MetricsPublic bool

	PublicURL   string // LORE_PUBLIC_URL: base URL used in generated links (signed file URLs)
	DataDir     string // LORE_DATA_DIR
	DatabaseURL string // DATABASE_URL: empty → SQLite in DataDir
	Environment string // LORE_ENV: local | dev | prod
	BodyLimit   int    // LORE_BODY_LIMIT_BYTES: max request body
	RunWorker   bool   // LORE_RUN_WORKER: serve also runs the Temporal worker
	LogLevel    string // LORE_LOG_LEVEL
	// TrustedProxies (LORE_TRUSTED_PROXIES, comma-separated IPs or CIDRs):
	// only requests from these may set the client IP with X-Forwarded-For
	// (the IP keys view events and the password rate limit).
	TrustedProxies []string
	// CORSOrigins (LORE_CORS_ORIGINS, comma-separated): browser origins the
	// API answers cross-origin, as the reference's front-ends are deployed
	// (their own host, calling the API's). "*" admits any origin, without
	// credentials; "none" turns CORS off.
	CORSOrigins   []string
	TemporalAddr  string // TEMPORAL_ADDRESS; "none" disables Temporal
	TemporalNS    string // TEMPORAL_NAMESPACE
	TemporalQueue string // TEMPORAL_TASK_QUEUE
	TemporalUI    string // TEMPORAL_UI_URL (printed by make run)
	TemporalGzip  bool   // TEMPORAL_GRPC_GZIP: compress gRPC requests to Temporal (worth it over a WAN only)

	JWTSecret string // LORE_JWT_SECRET (generated and persisted when unset)
	// SecretKey (LORE_SECRET_KEY, at least 32 bytes) encrypts the provider
	// secrets Lore stores (internal/sealed). Unset, a random one is generated
	// and kept in <data>/secret.key (0600) beside jwt.secret; with LORE_ENV=prod
	// it must be set (replicas must share it, and losing a generated file
	// would lose every stored key).
	SecretKey     string
	JWTTTL        time.Duration // LORE_JWT_TTL
	AdminEmail    string        // LORE_ADMIN_EMAIL
	AdminPassword string        // LORE_ADMIN_PASSWORD

	RedisURL     string // REDIS_URL: empty → in-memory LRU
	CacheMaxSize int    // LORE_CACHE_MAX_SIZE

	// Vector store: empty MilvusAddress → embedded store under DataDir/vectors.
	MilvusAddress    string
	MilvusUser       string
	MilvusPassword   string
	MilvusDB         string
	MilvusCollection string

	// Object storage: empty S3Endpoint → local directory under DataDir/files.
	S3Endpoint      string
	S3AccessKey     string
	S3SecretKey     string
	S3Bucket        string
	S3Region        string
	S3UseSSL        bool
	S3Public        bool
	S3PublicBaseURL string
	UploadMaxBytes  int64
	UploadAllowExt  []string

	// Imports (POST /documents:import, data sources).
	ImportMaxFiles    int   // LORE_IMPORT_MAX_FILES: files per import
	ImportMaxBytes    int64 // LORE_IMPORT_MAX_BYTES: largest file converted
	ImportConcurrency int   // LORE_IMPORT_CONCURRENCY: files converted at once per import
	// ImportFileTimeout (LORE_IMPORT_FILE_TIMEOUT): the time one file's
	// built-in conversion may take; past it the file fails alone.
	ImportFileTimeout time.Duration

	// Document revisions: each document keeps the full text of at most
	// RevisionsKeep revisions (LORE_REVISIONS_KEEP, 0: no count bound) and
	// none older than RevisionsMaxAge (LORE_REVISIONS_MAX_AGE, 0: no age
	// bound), its current one always; the worker prunes the rest every
	// RevisionsPruneEvery (LORE_REVISIONS_PRUNE_EVERY).
	RevisionsKeep       int
	RevisionsMaxAge     time.Duration
	RevisionsPruneEvery time.Duration

	// Model defaults (ai-config in the database overrides them per tenant).
	EmbedProvider  string // local | openai
	EmbedBaseURL   string
	EmbedAPIKey    string
	EmbedModel     string
	EmbedDimension int
	ChatProvider   string // extractive | openai
	ChatBaseURL    string
	ChatAPIKey     string
	ChatModel      string
	RerankProvider string // lexical | cohere
	RerankBaseURL  string
	RerankAPIKey   string
	RerankModel    string

	ChunkSize    int
	ChunkOverlap int

	// SPEC.md "Environment parameters".
	RAGRecallK                  int
	RAGRecallThreshold          float64
	RAGEnableRerank             bool
	RAGRerankTopK               int
	RAGRecallMax                int
	RAGDenseWeight              float64 // weight of the dense list in fusion (keyword: 1)
	AgentMaxIterations          int
	AgentMaxConsecutiveEmpty    int
	AgentSummaryTriggerMsgCount int
	AgentSummaryKeepLastN       int
	ChatStreamTimeoutSeconds    float64
	BatchVectorizeMaxDocs       int
	BatchVectorizeConcurrency   int
	BatchVectorizeGroup         int // documents per batch activity
	SiteAccessTokenTTL          time.Duration
	SitePasswordMaxFailures     int
	MessengerBaseURL            string
	MessengerReplayWindow       time.Duration
	MessengerMaxBodyBytes       int
	ViewFlushInterval           time.Duration
	ClientSiteCacheTTL          time.Duration

	// LoginMaxFailures and LoginIPMaxFailures bound admin login attempts
	// per account from one client IP and per client IP in LoginWindow
	// (with backoff); LoginAccountMaxFailures bounds those of one account
	// from every IP together, locking it for LoginAccountLock (doubled per
	// lock-out that day); TempPasswordTTL is how long invite and reset
	// passwords work.
	LoginMaxFailures        int
	LoginIPMaxFailures      int
	LoginAccountMaxFailures int
	LoginAccountLock        time.Duration
	LoginWindow             time.Duration
	TempPasswordTTL         time.Duration
	// AllowedProviderHosts (LORE_ALLOWED_PROVIDER_HOSTS) are the internal
	// hosts, host:ports, IPs and CIDRs configured endpoints may reach.
	AllowedProviderHosts []string
	// Public chat: requests per minute per client IP and site, and per
	// site; characters of caller instructions kept on sites that allow
	// them (their ee-config chat block; 0: dropped everywhere).
	ChatRatePerIP             int
	ChatRatePerSite           int
	ChatCallerInstructionsMax int
	// ChatDailyTokenBudget (LORE_CHAT_DAILY_TOKEN_BUDGET) is the model
	// tokens a site's chat may use per UTC day unless the site sets its
	// own (0: no budget).
	ChatDailyTokenBudget int64
	// ChatMessageMaxChars (LORE_CHAT_MESSAGE_MAX_CHARS) bounds the
	// characters of one user message of a chat request, and
	// ChatInputMaxChars (LORE_CHAT_INPUT_MAX_CHARS) those of all its
	// messages together (the whole input or messages array); larger
	// requests are refused (422). 0: no bound.
	ChatMessageMaxChars int
	ChatInputMaxChars   int
}

// Load reads the environment. It creates the data directory and, when
// LORE_JWT_SECRET is unset, a persisted random secret inside it.
func Load() (*Config, error) { return LoadFrom(os.LookupEnv) }

// LoadFrom is Load with another source of variables (tests pass a map).
func LoadFrom(lookup func(string) (string, bool)) (*Config, error) {
	return loadFrom(source{look: lookup})
}

// Defaults maps every variable Load reads to its default (a string, int,
// float64, bool or time.Duration): docs/configuration.md is checked against
// it.
func Defaults() map[string]any {
	e := source{look: func(string) (string, bool) { return "", false }, defaults: map[string]any{}}
	_, _ = loadFrom(e) // the defaults validate; an error would not change what was read
	return e.defaults
}

func loadFrom(e source) (*Config, error) {
	c := &Config{
		HTTPAddr:       e.str("LORE_HTTP_ADDR", ":8080"),
		PprofAddr:      e.str("LORE_PPROF_ADDR", ""),
		MetricsAddr:    e.str("LORE_METRICS_ADDR", ""),
		MetricsPublic:  e.bool("LORE_METRICS_PUBLIC", false),
		PublicURL:      e.str("LORE_PUBLIC_URL", ""),
		DataDir:        e.str("LORE_DATA_DIR", "./data"),
		DatabaseURL:    e.str("DATABASE_URL", ""),
		Environment:    e.str("LORE_ENV", "local"),
		BodyLimit:      e.int("LORE_BODY_LIMIT_BYTES", 8<<20),
		RunWorker:      e.bool("LORE_RUN_WORKER", true),
		LogLevel:       e.str("LORE_LOG_LEVEL", "info"),
		TrustedProxies: splitList(e.str("LORE_TRUSTED_PROXIES", "")),
		CORSOrigins:    splitList(e.str("LORE_CORS_ORIGINS", "http://localhost:8001,http://localhost:8002,http://localhost:3000")),
		TemporalAddr:   e.str("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		TemporalNS:     e.str("TEMPORAL_NAMESPACE", "default"),
		TemporalQueue:  e.str("TEMPORAL_TASK_QUEUE", "lore"),
		TemporalUI:     e.str("TEMPORAL_UI_URL", "http://127.0.0.1:8233"),
		TemporalGzip:   e.bool("TEMPORAL_GRPC_GZIP", false),

		JWTSecret:     e.str("LORE_JWT_SECRET", ""),
		SecretKey:     e.str("LORE_SECRET_KEY", ""),
		JWTTTL:        e.dur("LORE_JWT_TTL", 7*24*time.Hour),
		AdminEmail:    e.str("LORE_ADMIN_EMAIL", "admin@lore.local"),
		AdminPassword: e.str("LORE_ADMIN_PASSWORD", ""),

		RedisURL:     e.str("REDIS_URL", ""),
		CacheMaxSize: e.int("LORE_CACHE_MAX_SIZE", 10000),

		MilvusAddress:    e.str("MILVUS_ADDRESS", ""),
		MilvusUser:       e.str("MILVUS_USERNAME", ""),
		MilvusPassword:   e.str("MILVUS_PASSWORD", ""),
		MilvusDB:         e.str("MILVUS_DB", ""),
		MilvusCollection: e.str("MILVUS_COLLECTION", "lore_chunks"),

		S3Endpoint:      e.str("S3_ENDPOINT", ""),
		S3AccessKey:     e.str("S3_ACCESS_KEY", ""),
		S3SecretKey:     e.str("S3_SECRET_KEY", ""),
		S3Bucket:        e.str("S3_BUCKET", "lore"),
		S3Region:        e.str("S3_REGION", ""),
		S3UseSSL:        e.bool("S3_USE_SSL", false),
		S3Public:        e.bool("S3_PUBLIC_BUCKET", false),
		S3PublicBaseURL: e.str("S3_PUBLIC_BASE_URL", ""),
		UploadMaxBytes:  int64(e.int("LORE_UPLOAD_MAX_BYTES", 300<<20)),
		UploadAllowExt: strings.Split(e.str("LORE_UPLOAD_ALLOWED_EXT",
			"jpg,jpeg,png,gif,webp,svg,pdf,doc,docx,xls,xlsx,ppt,pptx,txt,md,zip"), ","),
		ImportMaxFiles:    e.int("LORE_IMPORT_MAX_FILES", 1000),
		ImportMaxBytes:    int64(e.int("LORE_IMPORT_MAX_BYTES", 100<<20)),
		ImportConcurrency: e.int("LORE_IMPORT_CONCURRENCY", 4),
		ImportFileTimeout: e.dur("LORE_IMPORT_FILE_TIMEOUT", DefaultImportFileTimeout),

		RevisionsKeep:       e.int("LORE_REVISIONS_KEEP", 50),
		RevisionsMaxAge:     e.dur("LORE_REVISIONS_MAX_AGE", 180*24*time.Hour),
		RevisionsPruneEvery: e.dur("LORE_REVISIONS_PRUNE_EVERY", time.Hour),

		EmbedProvider:  e.str("EMBED_PROVIDER", "local"),
		EmbedBaseURL:   e.str("EMBED_BASE_URL", ""),
		EmbedAPIKey:    e.str("EMBED_API_KEY", ""),
		EmbedModel:     e.str("EMBED_MODEL", "local-learned"),
		EmbedDimension: e.int("EMBED_DIMENSION", 256),
		ChatProvider:   e.str("CHAT_PROVIDER", "extractive"),
		ChatBaseURL:    e.str("CHAT_BASE_URL", ""),
		ChatAPIKey:     e.str("CHAT_API_KEY", ""),
		ChatModel:      e.str("CHAT_MODEL", "lore-extractive"),
		RerankProvider: e.str("RERANK_PROVIDER", "lexical"),
		RerankBaseURL:  e.str("RERANK_BASE_URL", ""),
		RerankAPIKey:   e.str("RERANK_API_KEY", ""),
		RerankModel:    e.str("RERANK_MODEL", "lore-lexical"),

		ChunkSize:    e.int("LORE_CHUNK_SIZE", 800),
		ChunkOverlap: e.int("LORE_CHUNK_OVERLAP", 100),

		RAGRecallK:                  e.int("RAG_RECALL_K", 50),
		RAGRecallThreshold:          e.float("RAG_RECALL_THRESHOLD", 0.3),
		RAGEnableRerank:             e.bool("RAG_ENABLE_RERANK", true),
		RAGRerankTopK:               e.int("RAG_RERANK_TOP_K", 5),
		RAGRecallMax:                e.int("RAG_RECALL_MAX", 100),
		RAGDenseWeight:              e.float("RAG_DENSE_WEIGHT", 1.0), // retrieve.DefaultDenseWeight
		AgentMaxIterations:          e.int("AGENT_MAX_ITERATIONS", 5),
		AgentMaxConsecutiveEmpty:    e.int("AGENT_MAX_CONSECUTIVE_EMPTY", 2),
		AgentSummaryTriggerMsgCount: e.int("AGENT_SUMMARY_TRIGGER_MSG_COUNT", 10),
		AgentSummaryKeepLastN:       e.int("AGENT_SUMMARY_KEEP_LAST_N", 6),
		ChatStreamTimeoutSeconds:    e.float("CHAT_STREAM_TIMEOUT_SECONDS", 120.0),
		BatchVectorizeMaxDocs:       e.int("LORE_BATCH_VECTORIZE_MAX", 5000),
		BatchVectorizeConcurrency:   e.int("LORE_BATCH_VECTORIZE_CONCURRENCY", 2),
		BatchVectorizeGroup:         e.int("LORE_BATCH_VECTORIZE_GROUP", 100),
		SiteAccessTokenTTL:          e.dur("LORE_SITE_ACCESS_TOKEN_TTL", 24*time.Hour),
		SitePasswordMaxFailures:     e.int("LORE_SITE_PASSWORD_MAX_FAILURES", 5),
		MessengerBaseURL:            e.str("MESSENGER_API_BASE_URL", ""),
		MessengerReplayWindow:       e.dur("MESSENGER_REPLAY_WINDOW", 5*time.Minute),
		MessengerMaxBodyBytes:       e.int("MESSENGER_MAX_BODY_BYTES", 64<<10),
		LoginMaxFailures:            e.int("LORE_LOGIN_MAX_FAILURES", 5),
		LoginIPMaxFailures:          e.int("LORE_LOGIN_IP_MAX_FAILURES", 30),
		LoginAccountMaxFailures:     e.int("LORE_LOGIN_ACCOUNT_MAX_FAILURES", 50),
		LoginAccountLock:            e.dur("LORE_LOGIN_ACCOUNT_LOCK", time.Minute),
		LoginWindow:                 e.dur("LORE_LOGIN_WINDOW", 15*time.Minute),
		TempPasswordTTL:             e.dur("LORE_TEMP_PASSWORD_TTL", 72*time.Hour),
		AllowedProviderHosts:        splitList(e.str("LORE_ALLOWED_PROVIDER_HOSTS", "")),
		ChatRatePerIP:               e.int("LORE_CHAT_RATE_PER_IP", 30),
		ChatRatePerSite:             e.int("LORE_CHAT_RATE_PER_SITE", 600),
		ChatCallerInstructionsMax:   e.int("LORE_CHAT_CALLER_INSTRUCTIONS_MAX", 2000),
		ChatDailyTokenBudget:        int64(e.int("LORE_CHAT_DAILY_TOKEN_BUDGET", 2_000_000)),
		ChatMessageMaxChars:         e.int("LORE_CHAT_MESSAGE_MAX_CHARS", 8000),
		ChatInputMaxChars:           e.int("LORE_CHAT_INPUT_MAX_CHARS", 32000),
		ViewFlushInterval:           e.dur("LORE_VIEW_FLUSH_INTERVAL", 200*time.Millisecond),
		ClientSiteCacheTTL:          e.dur("LORE_SITE_CACHE_TTL", 10*time.Minute),
	}
	if v := e.str("LORE_IMPORT_FILE_TIMEOUT", ""); v != "" {
		if _, err := time.ParseDuration(v); err != nil {
			return nil, fmt.Errorf("config: LORE_IMPORT_FILE_TIMEOUT: %q is not a duration (e.g. 3m, 90s)", v)
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if e.defaults != nil {
		return c, nil // only recording what is read: no data directory, no secrets
	}
	if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("config: data dir: %w", err)
	}
	if c.JWTSecret == "" {
		s, err := persistedSecret(filepath.Join(c.DataDir, "jwt.secret"))
		if err != nil {
			return nil, err
		}
		c.JWTSecret = s
	}
	if c.SecretKey == "" {
		s, err := persistedSecret(filepath.Join(c.DataDir, "secret.key"))
		if err != nil {
			return nil, err
		}
		c.SecretKey = s
	}
	return c, nil
}

// TemporalEnabled reports whether a Temporal server is configured.
func (c *Config) TemporalEnabled() bool {
	return c.TemporalAddr != "" && c.TemporalAddr != "none"
}

// SQLitePath is the database file used when DATABASE_URL is empty.
func (c *Config) SQLitePath() string { return filepath.Join(c.DataDir, "lore.db") }

// ChatStreamTimeout is CHAT_STREAM_TIMEOUT_SECONDS as a duration.
func (c *Config) ChatStreamTimeout() time.Duration {
	return time.Duration(c.ChatStreamTimeoutSeconds * float64(time.Second))
}

func (c *Config) validate() error {
	switch {
	case c.RAGRecallK < 1:
		return fmt.Errorf("config: RAG_RECALL_K must be >= 1")
	case c.RAGRecallMax < 1:
		return fmt.Errorf("config: RAG_RECALL_MAX must be >= 1")
	case !(c.RAGDenseWeight > 0 && c.RAGDenseWeight <= 100):
		return fmt.Errorf("config: RAG_DENSE_WEIGHT must be > 0 and <= 100")
	case c.RAGRerankTopK < 1:
		return fmt.Errorf("config: RAG_RERANK_TOP_K must be >= 1")
	case c.AgentMaxIterations < 1:
		return fmt.Errorf("config: AGENT_MAX_ITERATIONS must be >= 1")
	case c.ChatStreamTimeoutSeconds <= 0:
		return fmt.Errorf("config: CHAT_STREAM_TIMEOUT_SECONDS must be > 0")
	case c.ImportFileTimeout <= 0 || c.ImportFileTimeout > MaxImportFileTimeout:
		return fmt.Errorf("config: LORE_IMPORT_FILE_TIMEOUT must be > 0 and <= %s", MaxImportFileTimeout)
	case c.RevisionsKeep < 0:
		return fmt.Errorf("config: LORE_REVISIONS_KEEP must be >= 0 (0 keeps any number)")
	case c.RevisionsMaxAge < 0:
		return fmt.Errorf("config: LORE_REVISIONS_MAX_AGE must be >= 0 (0 keeps any age)")
	case c.RevisionsPruneEvery < time.Minute:
		return fmt.Errorf("config: LORE_REVISIONS_PRUNE_EVERY must be at least 1m")
	case c.BatchVectorizeConcurrency < 1:
		return fmt.Errorf("config: LORE_BATCH_VECTORIZE_CONCURRENCY must be >= 1")
	case c.ChunkSize > MaxChunkSize:
		return fmt.Errorf("config: LORE_CHUNK_SIZE must be <= %d (runes, so that a chunk fits a 65,535-byte Milvus text field)", MaxChunkSize)
	case c.JWTSecret != "" && len(c.JWTSecret) < 32:
		// HS256 keys shorter than the hash can be brute-forced offline
		// from any token.
		return fmt.Errorf("config: LORE_JWT_SECRET must be at least 32 bytes (it is %d); unset it to use a generated one", len(c.JWTSecret))
	case c.SecretKey != "" && len(c.SecretKey) < 32:
		return fmt.Errorf("config: LORE_SECRET_KEY must be at least 32 bytes (it is %d); unset it to use a generated one", len(c.SecretKey))
	case c.SecretKey == "" && c.Environment == "prod":
		// A generated key lives in one process's data directory: replicas
		// would each make their own, and a lost volume loses every stored
		// provider key.
		return fmt.Errorf("config: LORE_SECRET_KEY is required with LORE_ENV=prod (at least 32 bytes, e.g. openssl rand -hex 32); it encrypts the stored provider keys")
	}
	return nil
}

// DefaultImportFileTimeout is LORE_IMPORT_FILE_TIMEOUT's default, the
// conversion budget of convert.DefaultLimits; MaxImportFileTimeout bounds it.
const (
	DefaultImportFileTimeout = 3 * time.Minute
	MaxImportFileTimeout     = time.Hour
)

// MaxChunkSize bounds LORE_CHUNK_SIZE: at 4 bytes per rune (the UTF-8
// maximum) a chunk of this many runes, overlap included, fits Milvus's
// 65,535-byte VarChar limit, so no chunk is ever refused for its length.
const MaxChunkSize = 65535 / 4

// persistedSecret reads the secret kept in path, or creates it: 32 random
// bytes in hex, mode 0600. The file appears whole or not at all (written
// aside, then linked into place, which fails when it exists), so processes
// starting together on one data directory (serve and worker) agree on one
// secret.
func persistedSecret(path string) (string, error) {
	read := func() (string, bool) {
		b, err := os.ReadFile(path)
		s := strings.TrimSpace(string(b))
		return s, err == nil && len(s) >= 32
	}
	if s, ok := read(); ok {
		return s, nil
	}
	if _, err := os.Stat(path); err == nil {
		return "", fmt.Errorf("config: %s holds no secret of at least 32 bytes; remove it to generate one", path)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-*")
	if err != nil {
		return "", fmt.Errorf("config: persist %s: %w", filepath.Base(path), err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(hex.EncodeToString(buf) + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o600)
	}
	if werr != nil {
		return "", fmt.Errorf("config: persist %s: %w", filepath.Base(path), werr)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("config: persist %s: %w", filepath.Base(path), err)
	}
	if s, ok := read(); ok {
		return s, nil
	}
	return "", fmt.Errorf("config: %s holds no secret of at least 32 bytes", path)
}

// source reads variables through a lookup function, with typed defaults;
// with defaults non-nil it records each variable read and its default.
type source struct {
	look     func(string) (string, bool)
	defaults map[string]any
}

func (e source) raw(k string, def any) string {
	if _, seen := e.defaults[k]; e.defaults != nil && !seen {
		e.defaults[k] = def // the first read gives the default (a later one may only check the value)
	}
	if v, ok := e.look(k); ok {
		return v
	}
	return ""
}

func (e source) str(k, def string) string {
	if v := e.raw(k, def); v != "" {
		return v
	}
	return def
}

func (e source) int(k string, def int) int { return parsed(e, k, def, strconv.Atoi) }

func (e source) float(k string, def float64) float64 {
	return parsed(e, k, def, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
}

func (e source) bool(k string, def bool) bool { return parsed(e, k, def, strconv.ParseBool) }

func (e source) dur(k string, def time.Duration) time.Duration {
	return parsed(e, k, def, time.ParseDuration)
}

// parsed reads k with parse; an unset or unparsable value gives def.
func parsed[T any](e source, k string, def T, parse func(string) (T, error)) T {
	if v, err := parse(e.raw(k, def)); err == nil {
		return v
	}
	return def
}

// MapSource adapts a map to LoadFrom (tests build configurations this way).
func MapSource(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
