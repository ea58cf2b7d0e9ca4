package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/enrich"
	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/netguard"
	"github.com/lorekb/lore/internal/rerank"
)

// modelTestTimeout bounds each model's test call.
const modelTestTimeout = 30 * time.Second

// AIConnectionTestRequest is the body of ai-config/test-connection. The
// reference's shape is {model_type, config}: one model, its settings given
// (config omitted: the stored ones). Without model_type, every model is
// tried: the sections given ({chat?, embedding?, rerank?}, as in the PUT)
// over the stored ones, the others as stored. Given settings follow the PUT's
// rules: an omitted or masked api_key means the stored key, unless the
// provider or base_url changed (then api_key must be sent), and base_url
// passes the same address guard.
type AIConnectionTestRequest struct {
	ModelType string         `json:"model_type" required:"false" validate:"omitempty,oneof=chat embedding rerank" doc:"test only this model (the reference's shape)"`
	Config    *ModelConfigIn `json:"config" required:"false" doc:"settings of model_type (default: the stored ones)"`
	Chat      *ModelConfigIn `json:"chat" required:"false"`
	Embedding *ModelConfigIn `json:"embedding" required:"false"`
	Rerank    *ModelConfigIn `json:"rerank" required:"false"`
}

// ModelTestResult is one model's test: ok, or the provider's error with
// secrets removed.
type ModelTestResult struct {
	ModelType string  `json:"model_type" enum:"chat,embedding,rerank"`
	Provider  string  `json:"provider"`
	Model     string  `json:"model"`
	BaseURL   string  `json:"base_url"`
	Source    string  `json:"source" enum:"request,stored,platform" doc:"where the settings came from: the request, the tenant's ai-config, or the environment default"`
	OK        bool    `json:"ok"`
	Error     *string `json:"error"`
	Details   string  `json:"details" doc:"chat: the start of the answer; embedding: the vector dimension; rerank: the score"`
	Dimension *int    `json:"dimension,omitempty" doc:"embedding only"`
	LatencyMS int64   `json:"latency_ms"`
}

// AIConnectionTestView is the result: ok when every model tried answered.
type AIConnectionTestView struct {
	OK      bool              `json:"ok"`
	Results []ModelTestResult `json:"results"`
}

func (s *Server) aiConnectionRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/system-configs/ai-config/test-connection", Tag: "system-configs", Perm: AdminOnly,
			Summary: "Try the chat, embedding and rerank models with one small call each",
			Description: "Body {model_type, config} (the reference's) tests one model and answers 400 with the provider's error when it fails; " +
				"{chat?, embedding?, rerank?} (or {}) tests all three, given sections over the stored ones, and answers 200 with ok per model. " +
				"Given settings follow the PUT's rules (masked or omitted api_key: the stored key, unless provider or base_url changed; the address guard). " +
				"Errors never contain the api_key. Nothing is stored.",
			Body: AIConnectionTestRequest{}, Response: AIConnectionTestView{}, Handler: s.testAIConnection},
	}
}

func (s *Server) testAIConnection(c *fiber.Ctx) error {
	var in AIConnectionTestRequest
	if err := bindJSONBody(c.Body(), &in); err != nil { // strict, as the PUT
		return err
	}
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(c.Body(), &raw); err != nil {
		return BadRequest("malformed JSON: %v", err)
	}
	given := map[string]json.RawMessage{}
	kinds := []string{"chat", "embedding", "rerank"}
	path := map[string]string{"chat": "chat", "embedding": "embedding", "rerank": "rerank"}
	switch {
	case in.ModelType != "":
		if in.Chat != nil || in.Embedding != nil || in.Rerank != nil {
			return Invalid("model_type: send either model_type with config, or chat/embedding/rerank sections")
		}
		kinds = []string{in.ModelType}
		path[in.ModelType] = "config"
		if cfgHas(raw, "config") {
			given[in.ModelType] = raw["config"]
		}
	case in.Config != nil:
		return Invalid("model_type: required with config (chat, embedding or rerank)")
	default:
		for _, k := range kinds {
			if cfgHas(raw, k) {
				given[k] = raw[k]
			}
		}
	}
	ctx := c.UserContext()
	tenant := cfgTenant(c)
	eff, err := s.d.LoadAIConfig(ctx, tenant)
	if err != nil {
		return err
	}
	var stored deps.AIConfig
	if row, err := s.d.DB.GetSystemConfig(ctx, tenant, deps.AIConfigKey); err == nil {
		if stored, err = storedAIConfig(row.Value, true); err != nil {
			return err
		}
	} else if !errors.Is(err, db.ErrNotFound) {
		return err
	}
	def := s.d.DefaultAIConfig()
	sections := map[string]struct {
		eff, stored, def deps.ModelConfig
		allowed          []string
	}{
		"chat":      {eff.Chat, stored.Chat, def.Chat, chatProviders},
		"embedding": {eff.Embedding, stored.Embedding, def.Embedding, embedProviders},
		"rerank":    {eff.Rerank, stored.Rerank, def.Rerank, rerankProviders},
	}
	platform := principal(c).IsPlatform()
	configs := make([]deps.ModelConfig, len(kinds))
	sources := make([]string, len(kinds))
	for i, k := range kinds {
		sec := sections[k]
		m, source := sec.eff, "platform"
		if sec.stored.Provider != "" {
			source = "stored"
		}
		if rawSec, ok := given[k]; ok {
			source = "request"
			if m, err = s.givenModel(path[k], rawSec, sec.eff, sec.allowed); err != nil {
				return err
			}
			// A test call spends the platform's key by the PUT's rule too.
			if !platform {
				if err := platformKeyOnly(path[k], rawSec, m, sec.def); err != nil {
					return err
				}
			}
		}
		configs[i], sources[i] = m, source
	}
	view := AIConnectionTestView{OK: true, Results: make([]ModelTestResult, len(kinds))}
	var wg sync.WaitGroup
	for i := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			view.Results[i] = s.tryModel(ctx, kinds[i], configs[i], sources[i])
		}()
	}
	wg.Wait()
	for _, r := range view.Results {
		view.OK = view.OK && r.OK
	}
	if in.ModelType != "" && !view.OK {
		return BadRequest("connection failed: %s", *view.Results[0].Error)
	}
	return ok(c, view)
}

// givenModel completes settings sent for a test from the effective ones, by
// the PUT's rules.
func (s *Server) givenModel(path string, raw json.RawMessage, old deps.ModelConfig, allowed []string) (deps.ModelConfig, error) {
	var m deps.ModelConfig
	if err := mergeSection(path, raw, old, &m); err != nil {
		return m, err
	}
	if err := s.checkModel(path, &m, allowed); err != nil {
		return m, err
	}
	if !deps.SameEndpoint(old, m) {
		if err := resendKey(path, raw, &m); err != nil {
			return m, err
		}
		if err := s.checkModel(path, &m, allowed); err != nil {
			return m, err
		}
	}
	return m, nil
}

// tryModel makes one small call to a model: a five-token chat answer, the
// embedding of "Hello world", the rerank of one passage.
func (s *Server) tryModel(ctx context.Context, kind string, m deps.ModelConfig, source string) ModelTestResult {
	r := ModelTestResult{ModelType: kind, Provider: m.Provider, Model: m.Model, BaseURL: netguard.RedactURL(m.BaseURL), Source: source}
	if r.Provider == "" {
		r.Provider = "local"
	}
	ctx, cancel := context.WithTimeout(ctx, modelTestTimeout)
	defer cancel()
	start := time.Now()
	var err error
	switch kind {
	case "chat":
		var model llm.Model
		if model, err = s.d.NewChatModel(m); err == nil {
			var out llm.Result
			out, err = model.Generate(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Hello"}}, MaxTokens: 5}, nil)
			if err == nil {
				r.Details = "Response: " + enrich.Cut(out.Message.Content, 40)
			}
		}
	case "embedding":
		var vecs [][]float32
		if e, nerr := s.d.NewEmbedder(m); nerr != nil {
			err = nerr
		} else if vecs, err = e.Embed(ctx, []string{"Hello world"}); err == nil {
			if len(vecs) != 1 || len(vecs[0]) == 0 {
				err = fmt.Errorf("the server answered %d vectors for one text", len(vecs))
			} else {
				dim := len(vecs[0])
				r.Dimension = &dim
				r.Details = fmt.Sprintf("dimension %d", dim)
			}
		}
	case "rerank":
		if rr, nerr := s.d.NewReranker(m); nerr != nil {
			err = nerr
		} else {
			var res []rerank.Result
			if res, err = rr.Rerank(ctx, "Ping", []string{"Pong"}, 1); err == nil {
				if len(res) == 0 {
					err = errors.New("the server ranked no passage")
				} else {
					r.Details = fmt.Sprintf("score %.4f", res[0].Score)
				}
			}
		}
	}
	r.LatencyMS = time.Since(start).Milliseconds()
	if err != nil {
		msg := providerError(err, m)
		r.Error = &msg
		r.Details = ""
		return r
	}
	r.OK = true
	return r
}
