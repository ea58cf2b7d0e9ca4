package docx_test

import (
	"testing"

	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/convert/docx"
)

func TestConformance(t *testing.T) { converttest.Run(t, docx.Converter{}, converttest.Options{}) }
