package pdf_test

import (
	"testing"

	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/convert/pdf"
)

func TestConformance(t *testing.T) { converttest.Run(t, pdf.Converter{}, converttest.Options{}) }
