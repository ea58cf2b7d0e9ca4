package config

import (
	"strings"
	"testing"
)

func TestChunkSizeBound(t *testing.T) {
	load := func(size string) error {
		_, err := LoadFrom(MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(), "LORE_CHUNK_SIZE": size}))
		return err
	}
	if err := load("16383"); err != nil {
		t.Fatalf("the largest chunk size refused: %v", err)
	}
	if err := load("16384"); err == nil || !strings.Contains(err.Error(), "LORE_CHUNK_SIZE") {
		t.Fatalf("an oversize chunk size: %v", err)
	}
	if MaxChunkSize*4 > 65535 {
		t.Fatalf("MaxChunkSize %d runes may exceed 65,535 bytes", MaxChunkSize)
	}
}
