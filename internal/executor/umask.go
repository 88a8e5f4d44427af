package executor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"

	"github.com/agor-sh/agor/internal/executor/umask"
)

// loginDefs is where shadow's login settings are (UMASK, USERGROUPS_ENAB).
const loginDefs = "/etc/login.defs"

// applyLoginUmask sets this process's umask to the person's login umask,
// which everything it starts inherits: the unit's UMask= is a floor for
// the service, while her agents, terminals and commands should make files
// as her own logins do. Unknown, the unit's stays, and the log says so.
func applyLoginUmask(ctx context.Context, log *slog.Logger) {
	getent, err := exec.LookPath("getent")
	if err != nil {
		getent = "/usr/bin/getent"
	}
	a, err := umask.Getent(ctx, getent, uint32(os.Getuid()))
	if err != nil {
		log.Warn("login umask unknown; keeping the unit's", "err", err)
		return
	}
	defs, _ := os.ReadFile(loginDefs) // missing: the defaults
	mask, source := umask.Login(a, defs)
	old := syscall.Umask(int(mask))
	log.Info(fmt.Sprintf("umask %#o from %s (the unit gave %#o)", mask, source, old))
}
