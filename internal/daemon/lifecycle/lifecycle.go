// Package lifecycle is the daemon's own part of bringing executors up and
// down: the Slurm backend (each person's executor a job of theirs that
// dials back) and a backend's refusal as the protocol's error. The host
// backends, systemd and direct, with the execution policy, are
// internal/executorunit's, which agorctl's --no-daemon uses too.
package lifecycle

import (
	"errors"
	"fmt"

	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Unavailable maps a backend refusal (or the execution policy's, which
// wraps the same errors) to the protocol's error, with the wire's reason.
func Unavailable(err error) error {
	reason := apiwire.ReasonStartFailed
	switch {
	case errors.Is(err, executorunit.ErrInvalidUser):
		reason = apiwire.ReasonInvalidUser
	case errors.Is(err, executorunit.ErrNoSuchUser):
		reason = apiwire.ReasonNoSuchUser
	case errors.Is(err, executorunit.ErrLookupFailed):
		reason = apiwire.ReasonUserDatabase
	case errors.Is(err, executorunit.ErrNotAllowed):
		reason = apiwire.ReasonUserNotAllowed
	case errors.Is(err, executorunit.ErrNotAuthorized):
		reason = apiwire.ReasonNotAuthorized
	case errors.Is(err, executorunit.ErrUnitFailed):
		reason = apiwire.ReasonUnitFailed
	case errors.Is(err, executorunit.ErrEnvironmentNotAllowed):
		reason = apiwire.ReasonEnvironmentNotAllowed
	case errors.Is(err, executorunit.ErrNoSuchEnvironment), errors.Is(err, executorunit.ErrEnvironmentUnsupported):
		reason = apiwire.ReasonNoSuchEnvironment
	}
	return rpc.Errorf(protocol.CodeExecutorUnavailable, reason, "%v", fmt.Errorf("executor unavailable: %w", err))
}
