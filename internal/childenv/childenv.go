// Package childenv builds the environment of processes an executor
// starts for its user: its own environment minus what belongs to the
// service manager or to agor (socket activation, notify and watchdog
// variables, AGOR_*), plus what the request adds.
package childenv

import (
	"sort"
	"strings"
)

// blocked reports variables a child never inherits or receives.
func blocked(name string) bool {
	switch name {
	case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "INVOCATION_ID", "JOURNAL_STREAM", "CREDENTIALS_DIRECTORY":
		return true
	}
	return strings.HasPrefix(name, "LISTEN_") || strings.HasPrefix(name, "AGOR_")
}

// Build returns base (KEY=VALUE entries) without blocked variables, with
// extra set on top. Blocked names in extra are dropped too.
func Build(base []string, extra map[string]string) []string {
	env := map[string]string{}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if ok && !blocked(k) {
			env[k] = v
		}
	}
	for k, v := range extra {
		if k != "" && !strings.ContainsAny(k, "=\x00") && !blocked(k) {
			env[k] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
