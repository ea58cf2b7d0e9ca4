package pptx_test

import (
	"testing"

	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/convert/pptx"
)

func TestConformance(t *testing.T) { converttest.Run(t, pptx.Converter{}, converttest.Options{}) }
