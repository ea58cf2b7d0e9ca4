// Package builtin assembles the pure-Go converters into one registry: the
// default processor of an import, which needs no external service.
package builtin

import (
	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/docx"
	"github.com/lorekb/lore/internal/convert/html"
	"github.com/lorekb/lore/internal/convert/pdf"
	"github.com/lorekb/lore/internal/convert/pptx"
	"github.com/lorekb/lore/internal/convert/sheet"
	"github.com/lorekb/lore/internal/convert/text"
)

// Name is the processor name of the built-in converters.
const Name = "builtin"

// Registry is every built-in converter.
func Registry() *convert.Registry {
	return convert.NewRegistry(text.Converter{}, html.Converter{}, docx.Converter{}, pptx.Converter{},
		sheet.Converter{}, pdf.Converter{})
}
