package config

import (
	"strings"
	"testing"
	"time"
)

// TestImportFileTimeout: LORE_IMPORT_FILE_TIMEOUT is a duration, 3m by
// default, refused at start when it is not one, not positive or over an hour.
func TestImportFileTimeout(t *testing.T) {
	load := func(v string) (*Config, error) {
		vars := map[string]string{"LORE_DATA_DIR": t.TempDir()}
		if v != "" {
			vars["LORE_IMPORT_FILE_TIMEOUT"] = v
		}
		return LoadFrom(MapSource(vars))
	}
	for v, want := range map[string]time.Duration{"": 3 * time.Minute, "45s": 45 * time.Second, "1h": time.Hour} {
		if c, err := load(v); err != nil || c.ImportFileTimeout != want {
			t.Errorf("%q: %v %v, want %s", v, c, err, want)
		}
	}
	for _, v := range []string{"0", "0s", "-1m", "61m", "3 minutes", "180"} {
		if _, err := load(v); err == nil || !strings.Contains(err.Error(), "LORE_IMPORT_FILE_TIMEOUT") {
			t.Errorf("%q accepted: %v", v, err)
		}
	}
}

// TestMetricsPublicDefaultOff: /metrics is off the public listener unless
// LORE_METRICS_PUBLIC says otherwise.
func TestMetricsPublicDefaultOff(t *testing.T) {
	for v, want := range map[string]bool{"": false, "false": false, "true": true, "1": true} {
		vars := map[string]string{"LORE_DATA_DIR": t.TempDir()}
		if v != "" {
			vars["LORE_METRICS_PUBLIC"] = v
		}
		c, err := LoadFrom(MapSource(vars))
		if err != nil || c.MetricsPublic != want {
			t.Errorf("LORE_METRICS_PUBLIC=%q: %v %v", v, c, err)
		}
	}
}
