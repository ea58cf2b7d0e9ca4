// Package drivers registers every external document processor driver;
// import it for its side effect wherever processor.New is called.
package drivers

import (
	// Each driver registers itself in processor.Drivers.
	_ "github.com/lorekb/lore/internal/convert/processor/docling"
	_ "github.com/lorekb/lore/internal/convert/processor/mineru"
	_ "github.com/lorekb/lore/internal/convert/processor/paddleocr"
)
