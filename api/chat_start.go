package api

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
)

// startChatRun starts a turn's run through start, which sends one start
// request. The SDK gives one start request at most 10 s, whatever the
// caller's deadline; an engine that is slow to answer may still have
// started the run (it then runs, answers and stores the turn). So a start
// whose outcome is unknown (a deadline, an unavailable or overloaded
// engine) is sent again until until: a run that "already started" then is
// this turn's own (its id names the thread and turn), and its reader
// follows it instead of telling the client the turn failed.
func startChatRun[T any](ctx context.Context, until time.Time, start func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	wait := 100 * time.Millisecond
	for unknown := false; ; unknown = true {
		v, err := start(ctx)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case err == nil:
			return v, nil
		case unknown && errors.As(err, &started):
			return v, nil
		case !startUnknown(err):
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// startUnknown reports a start error after which the run may or may not
// exist (a cancelled request too: an overloaded engine resets streams).
func startUnknown(err error) bool {
	var deadline *serviceerror.DeadlineExceeded
	var unavailable *serviceerror.Unavailable
	var exhausted *serviceerror.ResourceExhausted
	var canceled *serviceerror.Canceled
	return errors.As(err, &deadline) || errors.As(err, &unavailable) || errors.As(err, &exhausted) ||
		errors.As(err, &canceled) || errors.Is(err, context.DeadlineExceeded)
}
