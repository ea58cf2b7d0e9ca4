// Command build makes the learned embedder's artifact from public text
// (scripts/embedder.sh runs it): `build prep ROOT CORPUS` writes the
// unpacked packages' English text as analyzer terms for fastText, and
// `build pack VEC CORPUS OUT` turns fastText's word vectors into the
// quantized model that internal/embed/learned loads.
package main

import (
	"fmt"
	"os"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "prep":
		err = prep(os.Args[2], os.Args[3])
	case len(os.Args) >= 5 && os.Args[1] == "pack":
		err = pack(os.Args[2], os.Args[3], os.Args[4], os.Args[5:])
	default:
		err = fmt.Errorf("usage: build prep ROOT CORPUS | build pack VEC CORPUS OUT [SOURCE...]")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}
