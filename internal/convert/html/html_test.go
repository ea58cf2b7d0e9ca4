package html_test

import (
	"testing"

	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/convert/html"
)

func TestConformance(t *testing.T) { converttest.Run(t, html.Converter{}, converttest.Options{}) }
