package api

import (
	"context"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Version is the build version /health and /system-info report: set at link
// time (make build passes `git describe`), else the module version of the
// binary, else "dev-" and the VCS revision Go stamped into it.
var Version = ""

// BuildVersion resolves Version (the `lore version` command prints it).
func BuildVersion() string {
	if Version != "" {
		return strings.TrimPrefix(Version, "v")
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return strings.TrimPrefix(v, "v")
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev-" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}

// The edition pair /health reports. The reference's open-source admin build
// (its EE pages are stubs) shows its community panels for "community", all of
// which Lore serves; told "enterprise" it would enable EE controls whose code
// it does not have. Lore answers the EE routes its SDK calls all the same.
const (
	edition    = "community"
	isLicensed = false
)

// SystemInfo is the data of GET /system-info (the reference's admin "system"
// panel): version and the ping of each engine, without secrets.
type SystemInfo struct {
	System        SystemPart  `json:"system"`
	Database      EnginePart  `json:"database"`
	VectorStore   EnginePart  `json:"vector_store"`
	Cache         EnginePart  `json:"cache"`
	ObjectStorage StoragePart `json:"object_storage"`
	Workflows     EnginePart  `json:"workflows"`
}

// SystemPart names the build.
type SystemPart struct {
	Version     string `json:"version"`
	Environment string `json:"environment"`
	Edition     string `json:"edition"`
}

// EnginePart is one backing engine: which, where (no credentials), and
// whether it answered.
type EnginePart struct {
	Backend    string `json:"backend"`
	Connection string `json:"connection"`
	Ping       bool   `json:"ping"`
}

// StoragePart is the object storage.
type StoragePart struct {
	Backend  string `json:"backend"`
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Ping     bool   `json:"ping"`
}

func (s *Server) systemInfoRoute() Route {
	return Route{Surface: Admin, Method: http.MethodGet, Path: "/system-info", Tag: "health", Perm: PlatformOnly,
		Summary:  "Version and the state of every engine (database, vector store, cache, object storage, workflows)",
		Response: SystemInfo{}, Handler: s.systemInfo}
}

// hostOnly keeps the host, port and path of a URL, dropping user info.
func hostOnly(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Host + u.Path
}

func (s *Server) systemInfo(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 3*time.Second)
	defer cancel()
	cfg := s.d.Cfg
	env := map[string]string{"local": "Local", "dev": "Development", "prod": "Production"}[cfg.Environment]
	if env == "" {
		env = cfg.Environment
	}
	out := SystemInfo{System: SystemPart{Version: BuildVersion(), Environment: env, Edition: "Community"}}
	out.Database = EnginePart{Backend: "SQLite", Connection: cfg.SQLitePath(), Ping: s.d.DB.Health(ctx) == nil}
	if cfg.DatabaseURL != "" {
		out.Database.Backend, out.Database.Connection = "PostgreSQL", hostOnly(cfg.DatabaseURL)
	}
	out.VectorStore = EnginePart{Backend: "Embedded", Connection: "in-process (" + cfg.DataDir + "/vectors)", Ping: true}
	if cfg.MilvusAddress != "" {
		out.VectorStore = EnginePart{Backend: "Milvus", Connection: cfg.MilvusAddress, Ping: true}
	}
	st, err := s.d.Cache.Stats(ctx)
	out.Cache = EnginePart{Backend: "In-Memory", Connection: "in-process", Ping: err == nil}
	if err == nil && st.Backend == "redis" {
		out.Cache.Backend, out.Cache.Connection = "Redis", hostOnly(cfg.RedisURL)
	}
	out.ObjectStorage = StoragePart{Backend: "Local", Endpoint: cfg.DataDir + "/files"}
	if cfg.S3Endpoint != "" {
		out.ObjectStorage = StoragePart{Backend: "S3", Endpoint: cfg.S3Endpoint, Bucket: cfg.S3Bucket}
	}
	if store, err := s.blobStore(); err == nil {
		_, lerr := store.List(ctx, "__ping__/", false)
		out.ObjectStorage.Ping = lerr == nil
	}
	out.Workflows = EnginePart{Backend: "none", Connection: cfg.TemporalAddr}
	if s.d.Temporal != nil {
		_, terr := s.d.Temporal.CheckHealth(ctx, nil)
		out.Workflows = EnginePart{Backend: "Temporal", Connection: cfg.TemporalAddr + "/" + cfg.TemporalNS, Ping: terr == nil}
	}
	return ok(c, out)
}
