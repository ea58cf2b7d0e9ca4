package sheet_test

import (
	"testing"

	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/convert/sheet"
)

func TestConformance(t *testing.T) { converttest.Run(t, sheet.Converter{}, converttest.Options{}) }
