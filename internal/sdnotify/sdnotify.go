// Package sdnotify tells systemd how a service is doing (sd_notify): ready,
// status, stopping, and watchdog keep-alives. Not running under systemd is a
// normal state in which every call does nothing.
package sdnotify

import (
	"context"
	"log/slog"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Send sends state (e.g. "READY=1"); an error is logged, never fatal.
func Send(log *slog.Logger, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		log.Warn("sd_notify failed", "state", state, "err", err)
	}
}

// Watchdog pings systemd at half the WatchdogSec= interval until ctx ends;
// without WatchdogSec= it returns at once.
func Watchdog(ctx context.Context, log *slog.Logger) {
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("watchdog settings invalid", "err", err)
	}
	if every <= 0 {
		return
	}
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
		}
	}
}
