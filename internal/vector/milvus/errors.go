package milvus

import (
	"context"
	"errors"

	"github.com/milvus-io/milvus/pkg/v2/util/merr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lorekb/lore/internal/vector"
)

// classified is an error with its retry class (vector.ErrPermanent or
// vector.ErrUnavailable) attached; its message is the error's own.
type classified struct {
	err, class error
}

func (e *classified) Error() string   { return e.err.Error() }
func (e *classified) Unwrap() []error { return []error{e.err, e.class} }

// permanentCodes are Milvus error codes (merr) that a retry cannot fix: the
// request, the schema or the credentials are wrong. Every other Milvus
// error (service not ready, rate limited, memory or disk quota, node
// failures) is worth retrying later.
var permanentCodes = map[int32]bool{}

func init() {
	for _, e := range []error{
		merr.ErrServiceUnimplemented, merr.ErrOperationNotSupported,
		merr.ErrCollectionNotFound, merr.ErrCollectionIllegalSchema, merr.ErrCollectionSchemaMismatch,
		merr.ErrPartitionNotFound, merr.ErrIndexNotFound, merr.ErrIndexNotSupported,
		merr.ErrDatabaseNotFound, merr.ErrDatabaseInvalidName,
		merr.ErrParameterInvalid, merr.ErrParameterMissing, merr.ErrParameterTooLarge,
		merr.ErrPrivilegeNotAuthenticated, merr.ErrPrivilegeNotPermitted, merr.ErrNeedAuthenticate,
		merr.ErrFieldNotFound, merr.ErrFieldInvalidName, merr.ErrInvalidInsertData,
		merr.ErrIncorrectParameterFormat, merr.ErrMissingRequiredParameters, merr.ErrCheckPrimaryKey,
	} {
		permanentCodes[merr.Code(e)] = true
	}
}

// classify attaches vector.ErrPermanent or vector.ErrUnavailable to an
// error from the client: bad request, schema and authentication errors are
// permanent; an unreachable or overloaded server, a timeout or any error
// not known to be permanent is retryable, since Temporal's retry policy
// bounds retries anyway.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, vector.ErrPermanent), errors.Is(err, vector.ErrUnavailable), errors.Is(err, vector.ErrClosed):
		return err
	case errors.Is(err, vector.ErrDimension), errors.Is(err, ErrSchemaVersion):
		return &classified{err, vector.ErrPermanent}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &classified{err, vector.ErrUnavailable}
	}
	if st, ok := status.FromError(err); ok {
		// A gRPC status: the transport or the server's gRPC layer answered.
		switch st.Code() {
		case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
			codes.Unauthenticated, codes.Unimplemented, codes.FailedPrecondition, codes.OutOfRange:
			return &classified{err, vector.ErrPermanent}
		}
		return &classified{err, vector.ErrUnavailable}
	}
	if permanentCodes[merr.Code(err)] || merr.GetErrorType(err) == merr.InputError {
		return &classified{err, vector.ErrPermanent}
	}
	return &classified{err, vector.ErrUnavailable}
}

// notLoaded reports an error that loading the collection again fixes: an
// operator (or a restarted query node) released it.
func notLoaded(err error) bool {
	return errors.Is(err, merr.ErrCollectionNotLoaded) || errors.Is(err, merr.ErrPartitionNotLoaded) ||
		errors.Is(err, merr.ErrCollectionNotFullyLoaded)
}
