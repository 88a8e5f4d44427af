package lifecycle

import (
	"errors"
	"fmt"

	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Unavailable maps a backend refusal (or the execution policy's, which
// wraps the same errors) to the protocol's error, with the wire's reason.
func Unavailable(err error) error {
	reason := apiwire.ReasonStartFailed
	switch {
	case errors.Is(err, ErrInvalidUser):
		reason = apiwire.ReasonInvalidUser
	case errors.Is(err, ErrNoSuchUser):
		reason = apiwire.ReasonNoSuchUser
	case errors.Is(err, ErrLookupFailed):
		reason = apiwire.ReasonUserDatabase
	case errors.Is(err, ErrNotAllowed):
		reason = apiwire.ReasonUserNotAllowed
	case errors.Is(err, ErrNotAuthorized):
		reason = apiwire.ReasonNotAuthorized
	case errors.Is(err, ErrUnitFailed):
		reason = apiwire.ReasonUnitFailed
	case errors.Is(err, ErrEnvironmentNotAllowed):
		reason = apiwire.ReasonEnvironmentNotAllowed
	case errors.Is(err, ErrNoSuchEnvironment), errors.Is(err, ErrEnvironmentUnsupported):
		reason = apiwire.ReasonNoSuchEnvironment
	}
	return rpc.Errorf(protocol.CodeExecutorUnavailable, reason, "%v", fmt.Errorf("executor unavailable: %w", err))
}
