package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/lorekb/lore/internal/convert/builtin"
	"github.com/lorekb/lore/internal/convert/processor"
	_ "github.com/lorekb/lore/internal/convert/processor/drivers" // the drivers test-connection reaches
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/netguard"
)

// DocProcessorView is GET /system-configs/doc-processor (the reference's
// DocProcessorResponse), api keys masked.
type DocProcessorView struct {
	Processors []processor.Config `json:"processors"`
}

// DocProcessorsUpdate is the PUT body: the whole list. A processor keeps its
// id; one without an id gets a new one. An omitted or masked api_key keeps
// the stored key of the same id, unless base_url changed: then the key must
// be sent again, so a stored key is never sent to a new address.
type DocProcessorsUpdate struct {
	Processors []processor.Config `json:"processors" validate:"max=50"`
}

// TestDocProcessorRequest is the body of test-connection.
type TestDocProcessorRequest struct {
	Config processor.Config `json:"config"`
}

// DocProcessorHealth is a successful connection test.
type DocProcessorHealth struct {
	Status  string  `json:"status" enum:"healthy"`
	Version *string `json:"version"`
}

func (s *Server) docProcessorRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/system-configs/doc-processor", Tag: "system-configs", Perm: AdminOnly,
			Summary:     "List the external document processors (api keys masked), then the built-in converters",
			Description: "The last entry (id builtin, origin platform) is Lore's built-in converters; import reads its type as them unless an enabled processor of that type is configured. PUT leaves it out.",
			Response:    DocProcessorView{}, Handler: s.getDocProcessors},
		{Surface: Admin, Method: http.MethodPut, Path: "/system-configs/doc-processor", Tag: "system-configs", Perm: AdminOnly,
			Summary:     "Replace the list of external document processors (Docling, MinerU, PaddleOCR)",
			Description: "An omitted or masked api_key keeps the stored key of the same id unless base_url changed (then 422: send the key again).",
			Body:        DocProcessorsUpdate{}, Response: DocProcessorView{}, Handler: s.putDocProcessors},
		{Surface: Admin, Method: http.MethodPost, Path: "/system-configs/doc-processor/test-connection", Tag: "system-configs", Perm: AdminOnly,
			Summary:     "Reach a document processor's health endpoint (given settings, or the stored key of the same id)",
			Description: "Answers {status: healthy, version} or 400 with the processor's error.",
			Body:        TestDocProcessorRequest{}, Response: DocProcessorHealth{}, Handler: s.testDocProcessor},
	}
}

// builtinProcessor is the entry that offers Lore's built-in converters in
// the list: the reference admin app imports only through a listed processor
// and sends just its type (processor_type), so the entry has a type the app
// knows, the one whose file types it accepts are the widest (Markdown and
// HTML among them). Import reads that type as the built-in converters unless
// an enabled processor of that type is configured. Origin platform: the
// app shows it as shared and leaves it out of what it saves.
func builtinProcessor() processor.Config {
	return processor.Config{ID: builtin.Name, Name: "Lore built-in converters", Type: processor.Docling, Enabled: true,
		Config: map[string]any{"is_ocr": false, "extract_images": true, "extract_tables": true}, Origin: "platform"}
}

// processors reads a tenant's stored processors (keys in clear) followed by
// the built-in entry, for the list and for import, which resolves a
// processor_type against them in order.
func (s *Server) processors(c *fiber.Ctx, tenantID int64) (processor.Document, error) {
	d, err := s.storedProcessors(c, tenantID)
	if err != nil {
		return d, err
	}
	d.Processors = append(d.Processors, builtinProcessor())
	return d, nil
}

// storedProcessors reads a tenant's stored processors (keys in clear).
func (s *Server) storedProcessors(c *fiber.Ctx, tenantID int64) (processor.Document, error) {
	row, err := s.d.DB.GetSystemConfig(c.UserContext(), tenantID, processor.ConfigKey)
	if errors.Is(err, db.ErrNotFound) {
		return processor.Document{Processors: []processor.Config{}}, nil
	}
	if err != nil {
		return processor.Document{}, err
	}
	return processor.Parse(row.Value)
}

func maskProcessors(d processor.Document) DocProcessorView {
	out := DocProcessorView{Processors: make([]processor.Config, len(d.Processors))}
	for i, p := range d.Processors {
		p.APIKey = maskSecret(p.APIKey)
		if m, ok := maskTree(map[string]any(p.Config)).(map[string]any); ok && p.Config != nil {
			p.Config = m
		}
		if p.Origin == "" {
			p.Origin = "tenant"
		}
		out.Processors[i] = p
	}
	return out
}

func (s *Server) getDocProcessors(c *fiber.Ctx) error {
	d, err := s.processors(c, cfgTenant(c))
	if err != nil {
		return err
	}
	return ok(c, maskProcessors(d))
}

func (s *Server) putDocProcessors(c *fiber.Ctx) error {
	var in DocProcessorsUpdate
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	old, err := s.storedProcessors(c, cfgTenant(c))
	if err != nil {
		return err
	}
	byID := map[string]processor.Config{}
	for _, p := range old.Processors {
		byID[p.ID] = p
	}
	seen := map[string]bool{}
	out := processor.Document{Processors: []processor.Config{}}
	for i, p := range in.Processors {
		if p.Origin == "platform" {
			continue // platform entries are shown, never stored per tenant
		}
		if err := p.Validate(); err != nil {
			return Invalid("processors[%d].%v", i, err)
		}
		if err := s.d.Guard().CheckURL(p.BaseURL); err != nil {
			return Invalid("processors[%d].base_url: %v", i, err)
		}
		if p.ID == "" {
			p.ID = uuid.NewString()
		}
		if len(p.ID) > 64 || seen[p.ID] || p.ID == builtin.Name {
			return Invalid("processors[%d].id: duplicate, reserved (%s) or longer than 64 characters", i, builtin.Name)
		}
		seen[p.ID] = true
		if err := restoreProcessorKey(&p, byID[p.ID], i); err != nil {
			return err
		}
		p.Origin = ""
		out.Processors = append(out.Processors, p)
	}
	b, _ := json.Marshal(out)
	if _, err := s.d.DB.PutSystemConfig(c.UserContext(), cfgTenant(c), processor.ConfigKey, string(b)); err != nil {
		return err
	}
	out.Processors = append(out.Processors, builtinProcessor())
	return ok(c, maskProcessors(out))
}

// restoreProcessorKey completes an api_key sent masked or omitted from the
// stored processor of the same id, and refuses to when the address changed.
func restoreProcessorKey(p *processor.Config, stored processor.Config, i int) error {
	masked := strings.Contains(p.APIKey, maskMarker)
	if p.APIKey != "" && !masked {
		return nil
	}
	if stored.APIKey == "" {
		if masked {
			return Invalid("processors[%d].api_key: masked value given but no key is stored; send the full value", i)
		}
		return nil
	}
	if strings.TrimRight(stored.BaseURL, "/") != strings.TrimRight(p.BaseURL, "/") {
		return Invalid("processors[%d].api_key: base_url changed; send the api_key again", i)
	}
	p.APIKey = stored.APIKey
	return nil
}

func (s *Server) testDocProcessor(c *fiber.Ctx) error {
	var in TestDocProcessorRequest
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	p := in.Config
	if err := p.Validate(); err != nil {
		return Invalid("config.%v", err)
	}
	old, err := s.storedProcessors(c, cfgTenant(c))
	if err != nil {
		return err
	}
	var stored processor.Config
	for _, o := range old.Processors {
		if o.ID == p.ID && p.ID != "" {
			stored = o
		}
	}
	if err := restoreProcessorKey(&p, stored, 0); err != nil {
		return Invalid("config.api_key: %s", strings.TrimPrefix(err.(*Error).Msg, "processors[0].api_key: "))
	}
	remote, err := processor.New(p, s.outboundClient(30*time.Second))
	if err != nil {
		return BadRequest("config.type: %v", err)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 30*time.Second)
	defer cancel()
	version, err := remote.Health(ctx)
	if err != nil {
		return BadRequest("connection failed: %s", redact(err.Error(), p.APIKey))
	}
	out := DocProcessorHealth{Status: "healthy"}
	if version != "" {
		out.Version = &version
	}
	return ok(c, out)
}

// redact removes a secret from a message shown to the caller.
func redact(msg, secret string) string {
	if secret == "" {
		return msg
	}
	return strings.ReplaceAll(msg, secret, maskSecret(secret))
}

// outboundClient is the HTTP client of calls to addresses an administrator
// configured. It follows no redirect: the request (and its key) goes to the
// configured address only, and a redirect answer is an error naming it, so
// the administrator can set the final address instead.
func (s *Server) outboundClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: s.d.Outbound(), CheckRedirect: refuseRedirect}
}

// errRedirect is the error of a redirect answer from a configured address.
var errRedirect = errors.New("redirects are not followed; set base_url to the address that answers")

// refuseRedirect is the CheckRedirect of outboundClient.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	return fmt.Errorf("the processor answered %d, a redirect to %s: %w", status, netguard.RedactURL(req.URL.String()), errRedirect)
}
