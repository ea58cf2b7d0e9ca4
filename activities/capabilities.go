package activities

import (
	"context"

	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/vector"
)

// The capabilities that more than one activity struct holds. *deps.Deps
// provides each; tests may hand in anything that does.

// VectorStores reaches every chunk store (one per embedding dimension): a
// tenant may have changed embedding models since some of its documents were
// indexed, so removals go to all of them.
type VectorStores interface {
	EachVectorStore(ctx context.Context, fn func(vector.Store) error) error
}

// TenantVectors adds the embedder of a tenant and the store of its dimension.
type TenantVectors interface {
	VectorStores
	TenantVectors(ctx context.Context, tenantID int64) (embed.Embedder, vector.Store, error)
}

// TenantModels gives a tenant's AI configuration and its chat model.
type TenantModels interface {
	AIConfig(ctx context.Context, tenantID int64) (deps.AIConfig, error)
	ChatModel(ctx context.Context, tenantID int64) (llm.Model, string, error)
}
