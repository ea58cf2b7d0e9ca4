package worker

import (
	"testing"
	"time"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/deps"
)

// TestImportActivitiesTakeTheFileTimeout: the worker's import activities
// convert each file within LORE_IMPORT_FILE_TIMEOUT.
func TestImportActivitiesTakeTheFileTimeout(t *testing.T) {
	for env, want := range map[string]time.Duration{"": 3 * time.Minute, "90s": 90 * time.Second, "1h": time.Hour} {
		vars := map[string]string{"LORE_DATA_DIR": t.TempDir()}
		if env != "" {
			vars["LORE_IMPORT_FILE_TIMEOUT"] = env
		}
		cfg, err := config.LoadFrom(config.MapSource(vars))
		if err != nil {
			t.Fatal(err)
		}
		if got := activities.NewImport(&deps.Deps{Cfg: cfg}).FileTimeout; got != want {
			t.Errorf("LORE_IMPORT_FILE_TIMEOUT=%q: FileTimeout %s, want %s", env, got, want)
		}
	}
}
