package activities

// Application error types of the activities: what a workflow (or Temporal's
// retry policy) tells apart. Every activity error with a type uses one of
// these; ErrSyncSource (sync.go) is the data-source sync's.
const (
	// ErrClientGone: the reader in this process went away (Hub.Cancel).
	ErrClientGone = "ClientGone"
	// ErrStreamTimeout: a model call reached ModelTurnInput.DeadlineMs (or a
	// search SearchInput.DeadlineMs).
	ErrStreamTimeout = "StreamTimeout"
	// ErrModelStreamBroken: a model call failed after it emitted events. It
	// is not retried: a retry would stream its answer again after the part
	// readers already have.
	ErrModelStreamBroken = "ModelStreamBroken"
	// ErrModelPermanent: the model endpoint refused the call in a way a
	// retry cannot fix (llm.ErrPermanent).
	ErrModelPermanent = "ModelPermanent"
	// ErrConfig: the tenant's AI configuration cannot serve the call (no
	// model configured, a model that cannot be built).
	ErrConfig = "Config"
	// ErrPermanent: a document that cannot be vectorized, whatever the retry.
	ErrPermanent = "Permanent"
	// ErrRerankPermanent: the reranker refused the call for good.
	ErrRerankPermanent = "RerankPermanent"
	// ErrTypeMessengerPermanent: a delivery or sync failure that retrying
	// cannot fix (bad credentials, unknown recipient, channel switched off).
	ErrTypeMessengerPermanent = "MessengerPermanent"
	// ErrImportFile: a file that cannot be imported (unsupported, encrypted,
	// corrupt, over the limit, missing): Temporal does not retry it and the
	// workflow records its reason.
	ErrImportFile = "ImportFileFailed"
)
