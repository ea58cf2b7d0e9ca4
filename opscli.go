// The operator commands of the lore binary that are not servers: `lore
// temporal setup` (register the Temporal namespace when it is missing, and
// Lore's search attributes on it)
// and `lore users reset-password|create` (let an operator who is locked out
// back in without wiping the data). They sit beside main because they import
// api and workflows, which no package under internal/ may.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/lorekb/lore/api"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"
)

// operatorUsage lists the operator commands, for the lore usage text.
const operatorUsage = `  temporal setup [--retention D]     register TEMPORAL_NAMESPACE if missing (retention D, default 72h) and Lore's search attributes on it
  users reset-password --email E     set a new temporary password (printed), or one read from stdin with --stdin
  users create --email E [--role R]  create an active user (admin by default) with a printed temporary password
`

// errUsage is returned for an operator command line that is not understood.
var errUsage = errors.New("usage")

// runOperator runs `lore temporal …` or `lore users …` (args start with the command
// name) against the configuration's database and Temporal namespace. in
// gives passwords for --stdin; out gets what an operator reads.
func runOperator(ctx context.Context, cfg *config.Config, args []string, in io.Reader, out io.Writer) error {
	if len(args) < 2 {
		return errUsage
	}
	switch args[0] + " " + args[1] {
	case "temporal setup":
		fs := flag.NewFlagSet("lore temporal setup", flag.ContinueOnError)
		fs.SetOutput(out)
		retention := fs.Duration("retention", 72*time.Hour, "retention of closed workflows in a namespace this command registers (an existing one keeps its own)")
		if err := fs.Parse(args[2:]); err != nil || fs.NArg() > 0 {
			return errUsage
		}
		if *retention < 24*time.Hour {
			return errors.New("--retention: Temporal keeps closed workflows for at least 24h")
		}
		return temporalSetup(ctx, cfg, *retention, out)
	case "users reset-password", "users create":
		return usersCommand(ctx, cfg, args[1], args[2:], in, out)
	}
	return errUsage
}

// temporalSetup registers the namespace when the cluster lacks it, then
// every custom search attribute Lore's workflows carry that the namespace
// lacks; present ones are left alone, so it can run at every deploy.
func temporalSetup(ctx context.Context, cfg *config.Config, retention time.Duration, out io.Writer) error {
	if !cfg.TemporalEnabled() {
		return errors.New("TEMPORAL_ADDRESS is none: there is no Temporal namespace to set up")
	}
	opts := client.Options{HostPort: cfg.TemporalAddr, Namespace: cfg.TemporalNS,
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	nc, err := client.NewNamespaceClient(opts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", cfg.TemporalAddr, err)
	}
	defer nc.Close()
	if err := ensureNamespace(ctx, nc, cfg.TemporalNS, retention, out); err != nil {
		return err
	}
	tc, err := client.Dial(opts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", cfg.TemporalAddr, err)
	}
	defer tc.Close()
	// A namespace registered a moment ago reaches the frontend's namespace
	// cache at its next refresh (up to 10 s on a default server): until then
	// calls on it answer NamespaceNotFound.
	var have *operatorservice.ListSearchAttributesResponse
	for wait := time.Now().Add(30 * time.Second); ; {
		have, err = tc.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: cfg.TemporalNS})
		var nf *serviceerror.NamespaceNotFound
		if err == nil || !errors.As(err, &nf) || time.Now().After(wait) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %s: %w", cfg.TemporalNS, err)
	}
	missing := map[string]bool{}
	names := make([]string, 0, len(workflows.SearchAttributeTypes))
	for name := range workflows.SearchAttributeTypes {
		names = append(names, name)
	}
	sort.Strings(names)
	req := &operatorservice.AddSearchAttributesRequest{Namespace: cfg.TemporalNS,
		SearchAttributes: map[string]enumspb.IndexedValueType{}}
	for _, name := range names {
		want := workflows.SearchAttributeTypes[name]
		if got, ok := have.GetCustomAttributes()[name]; ok {
			if got != want {
				return fmt.Errorf("search attribute %s exists with type %s, Lore needs %s: remove it or use another namespace", name, got, want)
			}
			fmt.Fprintf(out, "%-16s %-8s already registered\n", name, typeName(want))
			continue
		}
		missing[name] = true
		req.SearchAttributes[name] = want
	}
	if len(missing) == 0 {
		fmt.Fprintf(out, "namespace %s: every search attribute is registered\n", cfg.TemporalNS)
		return nil
	}
	if _, err := tc.OperatorService().AddSearchAttributes(ctx, req); err != nil {
		return fmt.Errorf("register search attributes on namespace %s: %w", cfg.TemporalNS, err)
	}
	for _, name := range names {
		if missing[name] {
			fmt.Fprintf(out, "%-16s %-8s registered\n", name, typeName(workflows.SearchAttributeTypes[name]))
		}
	}
	fmt.Fprintf(out, "namespace %s: done; filter the Web UI's workflow list with e.g. LoreSiteId = 3\n", cfg.TemporalNS)
	return nil
}

// ensureNamespace registers ns with retention unless the cluster has it.
func ensureNamespace(ctx context.Context, nc client.NamespaceClient, ns string, retention time.Duration, out io.Writer) error {
	_, err := nc.Describe(ctx, ns)
	var nf *serviceerror.NamespaceNotFound
	if err == nil {
		return nil
	}
	if !errors.As(err, &nf) {
		return fmt.Errorf("describe namespace %s: %w", ns, err)
	}
	err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: ns,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention)})
	var exists *serviceerror.NamespaceAlreadyExists
	if errors.As(err, &exists) {
		return nil // registered meanwhile by someone else
	}
	if err != nil {
		return fmt.Errorf("register namespace %s: %w", ns, err)
	}
	fmt.Fprintf(out, "namespace %s registered (retention %s)\n", ns, retention)
	return nil
}

func typeName(t enumspb.IndexedValueType) string {
	return strings.TrimPrefix(t.String(), "INDEXED_VALUE_TYPE_")
}

// usersCommand runs reset-password and create.
func usersCommand(ctx context.Context, cfg *config.Config, cmd string, args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("lore users "+cmd, flag.ContinueOnError)
	fs.SetOutput(out)
	email := fs.String("email", "", "the user's email (login name)")
	stdin := fs.Bool("stdin", false, "read the new password from the first line of stdin instead of generating one")
	role := fs.String("role", models.RoleAdmin, "create: admin | site_admin | editor")
	name := fs.String("name", "", "create: display name (default: the email)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *email == "" || len(*email) > 200 || !strings.Contains(*email, "@") {
		return errors.New("--email: a user's email is required")
	}
	if cmd == "create" && *role != models.RoleAdmin && *role != models.RoleSiteAdmin && *role != models.RoleEditor {
		return fmt.Errorf("--role: %q is not one of admin, site_admin, editor", *role)
	}
	pw, generated, err := newPassword(*stdin, in)
	if err != nil {
		return err
	}
	d, err := deps.Open(ctx, withoutTemporal(cfg), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer d.Close()
	hash, err := api.HashPassword(pw)
	if err != nil {
		return err
	}
	var u *models.User
	if cmd == "create" {
		tid, err := d.DB.EnsureDefaultTenant(ctx)
		if err != nil {
			return err
		}
		if *name == "" {
			*name = *email
		}
		u = &models.User{TenantID: tid, Name: *name, Email: *email, PasswordHash: hash, Role: *role, Status: models.UserActive}
		if err := d.DB.CreateUser(ctx, u, nil); errors.Is(err, db.ErrConflict) {
			return fmt.Errorf("%s already exists: use `lore users reset-password --email %s`", *email, *email)
		} else if err != nil {
			return err
		}
		fmt.Fprintf(out, "created %s user %s (id %d)\n", u.Role, u.Email, u.ID)
	} else {
		u, err = d.DB.UserByEmail(ctx, *email)
		if errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("no user has the email %s (`lore users create --email %s` makes one)", *email, *email)
		}
		if err != nil {
			return err
		}
		// The operator lets the user back in: the password changes, older
		// tokens stop working, and a deactivated or pending account is
		// active again.
		u.PasswordHash, u.Status = hash, models.UserActive
		u.TokenVersion++
		if err := d.DB.UpdateUser(ctx, u, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "password of %s (%s, id %d) reset; its old tokens no longer work\n", u.Email, u.Role, u.ID)
	}
	if generated {
		fmt.Fprintf(out, "temporary password: %s\n(change it with PUT /admin/api/v1/users/%d/password)\n", pw, u.ID)
	}
	return nil
}

// newPassword reads the new password from stdin, or generates one.
func newPassword(fromStdin bool, in io.Reader) (string, bool, error) {
	if !fromStdin {
		return api.TempPassword(), true, nil
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", false, err
	}
	pw := strings.TrimRight(line, "\r\n")
	if n := len([]rune(pw)); n < 8 || n > 100 {
		return "", false, fmt.Errorf("the password from stdin must have 8 to 100 characters (got %d)", n)
	}
	return pw, false, nil
}
