package text_test

import (
	"testing"

	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/convert/text"
)

func TestConformance(t *testing.T) { converttest.Run(t, text.Converter{}, converttest.Options{}) }
