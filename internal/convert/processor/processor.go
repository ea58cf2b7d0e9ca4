// Package processor describes the external document processors an import
// can use instead of the built-in converters (Docling Serve, MinerU,
// PaddleOCR-style layout parsing), as the doc-processor system config
// stores them, and builds the converter of one.
package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/convert"
)

// ConfigKey is the system-config key of the tenant's processors.
const ConfigKey = "doc-processor"

// Processor types, spelled as the reference spells them.
const (
	Docling   = "Docling"
	MinerU    = "MinerU"
	PaddleOCR = "PaddleOCR"
)

// Types lists the supported processor types.
var Types = []string{Docling, MinerU, PaddleOCR}

// Config is one configured processor (the reference's DocProcessorConfig).
type Config struct {
	ID      string         `json:"id"`
	Name    string         `json:"name"`
	Type    string         `json:"type" enum:"Docling,MinerU,PaddleOCR"`
	BaseURL string         `json:"base_url"`
	APIKey  string         `json:"api_key"`
	Enabled bool           `json:"enabled"`
	Config  map[string]any `json:"config"`
	Origin  string         `json:"origin,omitempty"`
}

// Document is the stored doc-processor config.
type Document struct {
	Processors []Config `json:"processors"`
}

// Parse reads a stored document; an empty value is no processors.
func Parse(raw string) (Document, error) {
	var d Document
	if strings.TrimSpace(raw) == "" {
		return Document{Processors: []Config{}}, nil
	}
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return d, err
	}
	if d.Processors == nil {
		d.Processors = []Config{}
	}
	return d, nil
}

// Find picks the processor an import names: by id, else by name, else by
// type (the reference's processor_type); disabled ones are not found.
func (d Document) Find(ref string) (Config, bool) {
	for _, match := range []func(Config) bool{
		func(c Config) bool { return c.ID == ref },
		func(c Config) bool { return strings.EqualFold(c.Name, ref) },
		func(c Config) bool { return strings.EqualFold(c.Type, ref) },
	} {
		for _, c := range d.Processors {
			if c.Enabled && match(c) {
				return c, true
			}
		}
	}
	return Config{}, false
}

// Validate checks one processor's fields.
func (c Config) Validate() error {
	if strings.TrimSpace(c.Name) == "" || len(c.Name) > 100 {
		return errors.New("name: 1..100 characters")
	}
	ok := false
	for _, t := range Types {
		ok = ok || t == c.Type
	}
	if !ok {
		return fmt.Errorf("type: one of %s", strings.Join(Types, ", "))
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return errors.New("base_url: an http(s) URL")
	}
	return nil
}

// Remote is what every external driver implements beyond conversion.
type Remote interface {
	convert.Converter
	// Health reaches the service and returns its version when it tells.
	Health(ctx context.Context) (version string, err error)
}

// Builder makes the driver of a processor type; drivers register
// themselves in Drivers from their packages (see package all).
type Builder func(c Config, hc *http.Client) Remote

// Drivers maps a processor type to its driver.
var Drivers = map[string]Builder{}

// Register makes a driver known for a processor type: newDriver wraps the
// client built with that service's way of sending the API key (header
// authHeader, value authPrefix+key).
func Register(typ, authHeader, authPrefix string, newDriver func(Client) Remote) {
	Drivers[typ] = func(c Config, hc *http.Client) Remote {
		return newDriver(NewClient(c, hc, authHeader, authPrefix))
	}
}

// ErrUnknown is returned for a type no driver serves.
var ErrUnknown = errors.New("unknown document processor type")

// New builds the converter of c. hc carries every request (the outbound
// address guard, timeouts); nil means a client with a 10-minute timeout.
func New(c Config, hc *http.Client) (Remote, error) {
	b, ok := Drivers[c.Type]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, c.Type)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Minute}
	}
	return b(c, hc), nil
}

// Formats are the extensions the external processors accept.
var Formats = []string{"pdf", "docx", "pptx", "xlsx", "html", "htm", "md", "csv", "png", "jpg", "jpeg"}
