package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/testenv"
	"github.com/lorekb/lore/models"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"golang.org/x/crypto/bcrypt"
)

func loadConfig(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.LoadFrom(config.MapSource(env))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestUsersResetPasswordAndCreate(t *testing.T) {
	ctx := context.Background()
	cfg := loadConfig(t, map[string]string{"LORE_DATA_DIR": t.TempDir(), "TEMPORAL_ADDRESS": "none",
		"LORE_JWT_SECRET": "opscli-secret-0123456789abcdef0123"})
	run := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := runOperator(ctx, cfg, args, strings.NewReader(stdin), &out)
		return out.String(), err
	}
	// Nobody exists yet: reset names the create command; create makes an admin.
	if _, err := run("", "users", "reset-password", "--email", "ops@example.com"); err == nil || !strings.Contains(err.Error(), "users create") {
		t.Fatalf("reset of an unknown user: %v", err)
	}
	out, err := run("", "users", "create", "--email", "ops@example.com")
	if err != nil {
		t.Fatal(err)
	}
	first := regexp.MustCompile(`temporary password: (\S+)`).FindStringSubmatch(out)
	if first == nil {
		t.Fatalf("create printed no password: %s", out)
	}
	if _, err := run("", "users", "create", "--email", "ops@example.com"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second create: %v", err)
	}
	// A password from stdin, then a generated one; each replaces the last and
	// revokes older tokens.
	user := func() *models.User {
		d, err := deps.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		u, err := d.DB.UserByEmail(ctx, "ops@example.com")
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	u0 := user()
	if u0.Role != models.RoleAdmin || u0.Status != models.UserActive || bcrypt.CompareHashAndPassword([]byte(u0.PasswordHash), []byte(first[1])) != nil {
		t.Fatalf("created user %+v", u0)
	}
	if out, err := run("chosen-password-1\n", "users", "reset-password", "--email", "ops@example.com", "--stdin"); err != nil || strings.Contains(out, "temporary password") {
		t.Fatalf("reset from stdin: %v %s", err, out)
	}
	u1 := user()
	if bcrypt.CompareHashAndPassword([]byte(u1.PasswordHash), []byte("chosen-password-1")) != nil || u1.TokenVersion != u0.TokenVersion+1 {
		t.Fatalf("after reset: version %d → %d", u0.TokenVersion, u1.TokenVersion)
	}
	if _, err := run("short\n", "users", "reset-password", "--email", "ops@example.com", "--stdin"); err == nil {
		t.Fatal("a 5-character password was accepted")
	}
	if u := user(); u.PasswordHash != u1.PasswordHash {
		t.Fatal("a refused reset changed the password")
	}
	if _, err := run("", "users", "create", "--email", "x@example.com", "--role", "root"); err == nil {
		t.Fatal("role root accepted")
	}
	if _, err := run("", "users", "frobnicate"); err != errUsage {
		t.Fatalf("unknown command: %v", err)
	}
}

func TestTemporalSetupRegistersSearchAttributes(t *testing.T) {
	path, err := testenv.TemporalCLI()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A dev server without Lore's attributes, as a fresh cluster is.
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: path, LogLevel: "error",
		ClientOptions: &client.Options{Namespace: "default"}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	cfg := loadConfig(t, map[string]string{"LORE_DATA_DIR": t.TempDir(), "TEMPORAL_ADDRESS": srv.FrontendHostPort()})
	var out bytes.Buffer
	if err := runOperator(ctx, cfg, []string{"temporal", "setup"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), " registered") != 6 {
		t.Fatalf("first setup:\n%s", out.String())
	}
	got, err := srv.Client().OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"LoreTenantId", "LoreSiteId", "LoreDocumentId", "LoreKind", "LoreRequestedBy", "LoreJob"} {
		if _, ok := got.GetCustomAttributes()[name]; !ok {
			t.Errorf("%s not registered", name)
		}
	}
	out.Reset()
	if err := runOperator(ctx, cfg, []string{"temporal", "setup"}, nil, &out); err != nil || strings.Count(out.String(), "already registered") != 6 {
		t.Fatalf("second setup (%v):\n%s", err, out.String())
	}
	// A namespace set up before LoreJob existed: setup adds it alone and
	// leaves the others as they are.
	if _, err := srv.Client().OperatorService().RemoveSearchAttributes(ctx, &operatorservice.RemoveSearchAttributesRequest{
		Namespace: "default", SearchAttributes: []string{"LoreJob"}}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runOperator(ctx, cfg, []string{"temporal", "setup"}, nil, &out); err != nil || strings.Count(out.String(), "already registered") != 5 ||
		!regexp.MustCompile(`(?m)^LoreJob +Bool +registered$`).MatchString(out.String()) {
		t.Fatalf("setup of an older namespace (%v):\n%s", err, out.String())
	}
	// A cluster without the namespace: setup registers it with the
	// retention asked for, then the attributes on it.
	cfg = loadConfig(t, map[string]string{"LORE_DATA_DIR": t.TempDir(), "TEMPORAL_ADDRESS": srv.FrontendHostPort(), "TEMPORAL_NAMESPACE": "lore-fresh"})
	out.Reset()
	if err := runOperator(ctx, cfg, []string{"temporal", "setup", "--retention", "1h"}, nil, &out); err == nil || !strings.Contains(err.Error(), "at least 24h") {
		t.Fatalf("retention under a day: %v", err)
	}
	if err := runOperator(ctx, cfg, []string{"temporal", "setup", "--retention", "48h"}, nil, &out); err != nil ||
		!strings.Contains(out.String(), "namespace lore-fresh registered (retention 48h0m0s)") || strings.Count(out.String(), "  registered") != 6 {
		t.Fatalf("setup of a missing namespace (%v):\n%s", err, out.String())
	}
	nc, err := client.NewNamespaceClient(client.Options{HostPort: srv.FrontendHostPort()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	desc, err := nc.Describe(ctx, "lore-fresh")
	if err != nil || desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() != 48*time.Hour {
		t.Fatalf("registered namespace: %v %v", desc.GetConfig(), err)
	}
	out.Reset()
	if err := runOperator(ctx, cfg, []string{"temporal", "setup"}, nil, &out); err != nil || strings.Contains(out.String(), "namespace lore-fresh registered") ||
		strings.Count(out.String(), "already registered") != 6 {
		t.Fatalf("second setup of that namespace (%v):\n%s", err, out.String())
	}
}
