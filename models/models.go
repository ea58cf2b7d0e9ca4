// Package models holds the bun row structs (the schema) and the enums of Lore.
// The same structs create the tables on SQLite and PostgreSQL.
package models

import (
	"time"

	"github.com/uptrace/bun"
)

// Site status values.
const (
	SiteActive   = "active"
	SiteInactive = "inactive"
)

// Document status values; only published documents reach the Client API.
const (
	DocDraft     = "draft"
	DocPublished = "published"
)

// Vector status values. "outdated" marks a completed document whose title or
// content changed after vectorization: it stays searchable with its old vectors
// until the next run replaces them.
const (
	VecNone       = "none"
	VecPending    = "pending"
	VecProcessing = "processing"
	VecCompleted  = "completed"
	VecFailed     = "failed"
	VecOutdated   = "outdated"
)

// User roles and statuses.
const (
	RoleAdmin     = "admin"
	RoleSiteAdmin = "site_admin"
	RoleEditor    = "editor"

	UserActive   = "active"
	UserInactive = "inactive"
	UserPending  = "pending"
)

// Tenant owns sites and users; a default tenant is created on first start.
type Tenant struct {
	bun.BaseModel `bun:"table:tenants"`
	ID            int64   `bun:"id,pk,autoincrement" json:"id"`
	Slug          string  `bun:"slug,notnull,unique" json:"slug"`
	Name          string  `bun:"name,notnull" json:"name"`
	Domain        *string `bun:"domain" json:"domain"`
	LogoURL       *string `bun:"logo_url" json:"logo_url"`
	Description   *string `bun:"description" json:"description"`
	Status        string  `bun:"status,notnull,default:'active'" json:"status"`
	// Plan holds the reference's EE plan fields (plan, max_*, contact_*,
	// advanced_config, plan_expires_at) as a JSON object; Lore enforces none
	// of them, it keeps and returns what the admin set.
	Plan      string    `bun:"plan,notnull,default:'{}'" json:"-"`
	CreatedAt time.Time `bun:"created_at,notnull" json:"created_at"`
	UpdatedAt time.Time `bun:"updated_at,notnull" json:"updated_at"`
}

// Site is one documentation site: a tree of collections and documents.
type Site struct {
	bun.BaseModel     `bun:"table:sites"`
	ID                int64     `bun:"id,pk,autoincrement" json:"id"`
	TenantID          int64     `bun:"tenant_id,notnull" json:"tenant_id"`
	Name              string    `bun:"name,notnull,unique" json:"name"`
	Slug              string    `bun:"slug,notnull,unique" json:"slug"`
	Domain            *string   `bun:"domain,unique" json:"domain"`
	Description       string    `bun:"description,notnull,default:''" json:"description"`
	Icon              string    `bun:"icon,notnull,default:''" json:"icon"`
	Status            string    `bun:"status,notnull,default:'active'" json:"status"`
	ThemeColor        string    `bun:"theme_color,notnull,default:'blue'" json:"theme_color"`
	LayoutMode        string    `bun:"layout_mode,notnull,default:'sidebar'" json:"layout_mode"`
	QuickQuestions    string    `bun:"quick_questions,notnull,default:'[]'" json:"-"` // JSON array
	ShowPipelineTrace bool      `bun:"show_pipeline_trace,notnull,default:false" json:"show_pipeline_trace"`
	IsPublic          bool      `bun:"is_public,notnull,default:true" json:"is_public"`
	RequiresPassword  bool      `bun:"requires_password,notnull,default:false" json:"requires_password"`
	PasswordHash      string    `bun:"password_hash,notnull,default:''" json:"-"`
	BotConfig         string    `bun:"bot_config,notnull,default:'{}'" json:"-"` // JSON: messenger channel settings
	Deleting          bool      `bun:"deleting,notnull,default:false" json:"-"`  // hidden while a DeleteSite job runs
	CreatedAt         time.Time `bun:"created_at,notnull" json:"created_at"`
	UpdatedAt         time.Time `bun:"updated_at,notnull" json:"updated_at"`
}

// HasPassword reports whether an access password is set (EE field has_password).
func (s *Site) HasPassword() bool { return s.PasswordHash != "" }

// Collection is a node of a site's tree.
type Collection struct {
	bun.BaseModel `bun:"table:collections"`
	ID            int64     `bun:"id,pk,autoincrement" json:"id"`
	TenantID      int64     `bun:"tenant_id,notnull" json:"tenant_id"`
	SiteID        int64     `bun:"site_id,notnull" json:"site_id"`
	ParentID      *int64    `bun:"parent_id" json:"parent_id"`
	Title         string    `bun:"title,notnull" json:"title"`
	Order         int       `bun:"sort_order,notnull,default:0" json:"order"`
	CreatedAt     time.Time `bun:"created_at,notnull" json:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at,notnull" json:"updated_at"`
}

// Document is one Markdown page of a site.
type Document struct {
	bun.BaseModel  `bun:"table:documents"`
	ID             int64      `bun:"id,pk,autoincrement" json:"id"`
	TenantID       int64      `bun:"tenant_id,notnull" json:"tenant_id"`
	SiteID         int64      `bun:"site_id,notnull" json:"site_id"`
	CollectionID   *int64     `bun:"collection_id" json:"collection_id"`
	Title          string     `bun:"title,notnull" json:"title"`
	Content        string     `bun:"content,notnull,default:''" json:"content"`
	Summary        string     `bun:"summary,notnull,default:''" json:"summary"`
	CoverImage     string     `bun:"cover_image,notnull,default:''" json:"cover_image"`
	Category       string     `bun:"category,notnull,default:''" json:"category"`
	Author         string     `bun:"author,notnull,default:''" json:"author"`
	Tags           string     `bun:"tags,notnull,default:'[]'" json:"-"` // JSON array
	Status         string     `bun:"status,notnull,default:'draft'" json:"status"`
	VectorStatus   string     `bun:"vector_status,notnull,default:'none'" json:"vector_status"`
	VectorError    string     `bun:"vector_error,notnull,default:''" json:"vector_error"`
	VectorizedAt   *time.Time `bun:"vectorized_at" json:"vectorized_at"`
	ContentVersion int64      `bun:"content_version,notnull,default:1" json:"content_version"` // bumped on every title/content edit; part of chunk ids
	ChunkCount     int        `bun:"chunk_count,notnull,default:0" json:"chunk_count"`
	Views          int64      `bun:"views,notnull,default:0" json:"views"`
	ReadingTime    int        `bun:"reading_time,notnull,default:0" json:"reading_time"`
	ParseMeta      *string    `bun:"parse_meta" json:"-"` // JSON object given on create (parser metadata); NULL when none
	CreatedAt      time.Time  `bun:"created_at,notnull" json:"created_at"`
	UpdatedAt      time.Time  `bun:"updated_at,notnull" json:"updated_at"`
}

// User is an admin account.
type User struct {
	bun.BaseModel `bun:"table:users"`
	ID            int64  `bun:"id,pk,autoincrement" json:"id"`
	TenantID      int64  `bun:"tenant_id,notnull" json:"tenant_id"`
	Name          string `bun:"name,notnull,default:''" json:"name"`
	Email         string `bun:"email,notnull,unique" json:"email"`
	PasswordHash  string `bun:"password_hash,notnull" json:"-"`
	Role          string `bun:"role,notnull" json:"role"`
	Status        string `bun:"status,notnull" json:"status"`
	AvatarURL     string `bun:"avatar_url,notnull,default:''" json:"avatar_url"`
	TokenVersion  int64  `bun:"token_version,notnull,default:0" json:"-"` // bumped on password change: older JWTs stop working
	// TempPasswordExpiresAt is set while the password is a generated one
	// (invite, reset): it stops working then, and until the user sets their
	// own every admin route but the password change answers 403.
	TempPasswordExpiresAt *time.Time `bun:"temp_password_expires_at" json:"-"`
	LastLoginAt           *time.Time `bun:"last_login_at" json:"last_login_at"`
	LastLoginIP           string     `bun:"last_login_ip,notnull,default:''" json:"last_login_ip"`
	CreatedAt             time.Time  `bun:"created_at,notnull" json:"created_at"`
	UpdatedAt             time.Time  `bun:"updated_at,notnull" json:"updated_at"`
}

// UserSite assigns a site to a site_admin or editor.
type UserSite struct {
	bun.BaseModel `bun:"table:user_sites"`
	UserID        int64 `bun:"user_id,pk"`
	SiteID        int64 `bun:"site_id,pk"`
}

// ViewEvent records one client read of a document detail.
type ViewEvent struct {
	bun.BaseModel `bun:"table:view_events"`
	ID            int64     `bun:"id,pk,autoincrement"`
	SiteID        int64     `bun:"site_id,notnull"`
	DocumentID    int64     `bun:"document_id,notnull"`
	IP            string    `bun:"ip,notnull,default:''"`
	UserAgent     string    `bun:"user_agent,notnull,default:''"`
	Referer       string    `bun:"referer,notnull,default:''"`
	CreatedAt     time.Time `bun:"created_at,notnull"`
}

// ChatSession is one conversation thread of a member on a site.
type ChatSession struct {
	bun.BaseModel `bun:"table:chat_sessions"`
	ID            int64  `bun:"id,pk,autoincrement" json:"id"`
	ThreadID      string `bun:"thread_id,notnull,unique" json:"thread_id"`
	TenantID      int64  `bun:"tenant_id,notnull" json:"tenant_id"`
	SiteID        *int64 `bun:"site_id" json:"site_id"`
	MemberID      string `bun:"member_id,notnull" json:"member_id"`
	// OwnerHash is the SHA-256 (hex) of the owner secret of a session opened
	// through the client API ('' for messenger sessions): reads and deletes
	// through the client API need the secret.
	OwnerHash string `bun:"owner_hash,notnull,default:''" json:"-"`
	// OwnerMemberHash is the hash of the strong member id (an unguessable
	// visitor id) a client API session was opened with ('' otherwise): that
	// member id owns the session as the secret does.
	OwnerMemberHash string    `bun:"owner_member_hash,notnull,default:''" json:"-"`
	Title           string    `bun:"title,notnull,default:''" json:"title"`
	Source          string    `bun:"source,notnull,default:'web_chat'" json:"source"`
	LastMessage     string    `bun:"last_message,notnull,default:''" json:"last_message"`
	LastMessageRole string    `bun:"last_message_role,notnull,default:''" json:"last_message_role"`
	MessageCount    int       `bun:"message_count,notnull,default:0" json:"message_count"`
	Summary         string    `bun:"summary,notnull,default:''" json:"-"`      // conversation memory after summarization
	SummaryUpTo     int       `bun:"summary_up_to,notnull,default:0" json:"-"` // messages with position below are covered by Summary
	SourceOffset    int       `bun:"source_offset,notnull,default:0" json:"-"`
	TurnCount       int       `bun:"turn_count,notnull,default:0" json:"-"`
	CreatedAt       time.Time `bun:"created_at,notnull" json:"created_at"`
	UpdatedAt       time.Time `bun:"updated_at,notnull" json:"updated_at"`
}

// ChatMessage is one row of the flat OpenAI-style history.
type ChatMessage struct {
	bun.BaseModel `bun:"table:chat_messages"`
	ID            int64     `bun:"id,pk,autoincrement" json:"-"`
	ThreadID      string    `bun:"thread_id,notnull" json:"-"`
	Turn          int       `bun:"turn,notnull" json:"-"`
	Position      int       `bun:"position,notnull" json:"-"` // order within the thread
	ChatMessageID string    `bun:"chat_message_id,notnull,unique" json:"chat_message_id"`
	MessageSeq    *int      `bun:"message_seq" json:"message_seq"` // index among assistant rows with content
	Role          string    `bun:"role,notnull" json:"role"`
	Content       string    `bun:"content,notnull,default:''" json:"content"`
	ToolCalls     string    `bun:"tool_calls,notnull,default:'[]'" json:"-"` // JSON
	ToolCallID    string    `bun:"tool_call_id,notnull,default:''" json:"tool_call_id"`
	Sources       string    `bun:"sources,notnull,default:''" json:"-"` // JSON, assistant final rows
	Extra         string    `bun:"extra,notnull,default:'{}'" json:"-"` // JSON additional_kwargs
	ElapsedMS     int64     `bun:"elapsed_ms,notnull,default:0" json:"elapsed_ms"`
	CreatedAt     time.Time `bun:"created_at,notnull" json:"created_at"`
}

// ToolResult keeps the retrieval result of one search tool call, keyed by
// thread and call: a model may derive call ids from the question (the
// built-in one does), so two threads can share one.
type ToolResult struct {
	bun.BaseModel `bun:"table:tool_results"`
	ThreadID      string    `bun:"thread_id,pk"`
	ToolCallID    string    `bun:"tool_call_id,pk"`
	Content       string    `bun:"content,notnull"` // JSON
	CreatedAt     time.Time `bun:"created_at,notnull"`
}

// Feedback is a reader's rating of one assistant answer.
type Feedback struct {
	bun.BaseModel `bun:"table:chat_feedback"`
	ID            int64     `bun:"id,pk,autoincrement"`
	ChatMessageID string    `bun:"chat_message_id,notnull"`
	ThreadID      string    `bun:"thread_id,notnull"`
	MemberID      string    `bun:"member_id,notnull"`
	Rating        *string   `bun:"rating"`
	Reason        *string   `bun:"reason"`
	CreatedAt     time.Time `bun:"created_at,notnull"`
}

// SystemConfig is one configuration document (ai-config, bot-config) of a tenant.
type SystemConfig struct {
	bun.BaseModel `bun:"table:system_configs"`
	ID            int64     `bun:"id,pk,autoincrement"`
	TenantID      int64     `bun:"tenant_id,notnull,unique:tenant_key"`
	ConfigKey     string    `bun:"config_key,notnull,unique:tenant_key"`
	Value         string    `bun:"value,notnull"` // JSON
	CreatedAt     time.Time `bun:"created_at,notnull"`
	UpdatedAt     time.Time `bun:"updated_at,notnull"`
}

// SiteAPIKey is an EE bot API key of a site; only its hash is stored.
type SiteAPIKey struct {
	bun.BaseModel `bun:"table:site_api_keys"`
	ID            int64      `bun:"id,pk,autoincrement" json:"id"`
	SiteID        int64      `bun:"site_id,notnull" json:"site_id"`
	Name          string     `bun:"name,notnull,default:''" json:"name"`
	Prefix        string     `bun:"prefix,notnull" json:"prefix"` // first characters, shown to identify the key
	KeyHash       string     `bun:"key_hash,notnull,unique" json:"-"`
	RevokedAt     *time.Time `bun:"revoked_at" json:"revoked_at"`
	CreatedAt     time.Time  `bun:"created_at,notnull" json:"created_at"`
}

// ProcessedMessage remembers a messenger message id so a redelivered callback
// is answered once.
type ProcessedMessage struct {
	bun.BaseModel `bun:"table:processed_messages"`
	Channel       string    `bun:"channel,pk"`
	MsgID         string    `bun:"msg_id,pk"`
	CreatedAt     time.Time `bun:"created_at,notnull"`
}

// Job maps an API job id to the Temporal workflow that runs it, with what
// the job concerns (tenant, site, document) so its scope is checked without
// the workflow engine, and its input so :retry can start it again.
type Job struct {
	bun.BaseModel `bun:"table:jobs"`
	ID            string    `bun:"id,pk" json:"id"`
	Kind          string    `bun:"kind,notnull" json:"kind"`
	WorkflowID    string    `bun:"workflow_id,notnull" json:"workflow_id"`
	RunID         string    `bun:"run_id,notnull,default:''" json:"run_id"`
	Subject       string    `bun:"subject,notnull,default:''" json:"subject"`
	CreatedBy     int64     `bun:"created_by,notnull,default:0" json:"created_by"`
	CreatedAt     time.Time `bun:"created_at,notnull" json:"created_at"`
	TenantID      int64     `bun:"tenant_id,notnull,default:0" json:"tenant_id"`
	SiteID        int64     `bun:"site_id,notnull,default:0" json:"site_id"`
	DocumentID    int64     `bun:"document_id,notnull,default:0" json:"document_id"`
	Title         string    `bun:"title,notnull,default:''" json:"title"`
}

// Chunk is one indexed chunk of a document version, as the vectorization
// wrote it to the vector store: the record every backend shares (the
// embedded store and Milvus alike), so an admin's chunk view and the
// retrieval test read chunk text here, never through a workflow, and a
// re-index can tell chunks of an older index format from current ones.
type Chunk struct {
	bun.BaseModel `bun:"table:chunks"`
	DocumentID    int64  `bun:"document_id,pk" json:"document_id"`
	Version       int64  `bun:"content_version,pk" json:"content_version"`
	Index         int    `bun:"chunk_index,pk" json:"chunk_index"`
	SiteID        int64  `bun:"site_id,notnull" json:"site_id"`
	Heading       string `bun:"heading,notnull,default:''" json:"heading_path"`
	Text          string `bun:"text,notnull,default:''" json:"text"`
	// Start and End locate Text in the document's content of Version, in
	// runes (-1 when the text is not a verbatim slice of it, e.g. a long
	// code block cut and fenced again).
	Start int `bun:"start_rune,notnull,default:-1" json:"start"`
	End   int `bun:"end_rune,notnull,default:-1" json:"end"`
	// IndexFormat is vector.IndexFormat when the chunk was written: the
	// analyzer version and chunking that made it.
	IndexFormat string `bun:"index_format,notnull,default:''" json:"index_format"`
}

// All lists every model in creation order (used by migrations and tests).
func All() []any {
	return []any{
		(*Tenant)(nil), (*Site)(nil), (*Collection)(nil), (*Document)(nil),
		(*User)(nil), (*UserSite)(nil), (*ViewEvent)(nil),
		(*ChatSession)(nil), (*ChatMessage)(nil), (*ToolResult)(nil), (*Feedback)(nil),
		(*SystemConfig)(nil), (*SiteAPIKey)(nil), (*ProcessedMessage)(nil), (*Job)(nil),
		(*DataSource)(nil), (*ImportItem)(nil), (*Chunk)(nil), (*DocumentRevision)(nil),
	}
}
