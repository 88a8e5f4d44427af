// Package childenv builds the environment of processes an executor
// starts for its user: its own environment minus what belongs to the
// service manager or to agor (socket activation, notify and watchdog
// variables, AGOR_*), plus what the request adds and, for agents, what
// the operator configured.
package childenv

import (
	"sort"
	"strings"
)

// blocked reports variables a child never inherits or receives.
func blocked(name string) bool {
	return Manager(name) || strings.HasPrefix(name, "AGOR_")
}

// Manager reports variables the service manager hands the executor
// (socket activation, notify, watchdog, credentials): meaningless or
// harmful in any child, whoever asks for them.
func Manager(name string) bool {
	switch name {
	case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "INVOCATION_ID", "JOURNAL_STREAM", "CREDENTIALS_DIRECTORY":
		return true
	}
	return strings.HasPrefix(name, "LISTEN_")
}

// Build returns base (KEY=VALUE entries) without blocked variables, with
// extra set on top. Blocked names in extra are dropped too.
func Build(base []string, extra map[string]string) []string {
	return build(base, extra, nil)
}

// Configured is Build with the operator's settings (agents.yaml) set last.
// They may name AGOR_* variables, which the agent adapters read (their
// AGOR_*_BASE_URL endpoints); service manager variables stay out.
func Configured(base []string, extra, settings map[string]string) []string {
	return build(base, extra, settings)
}

func build(base []string, extra, settings map[string]string) []string {
	env := map[string]string{}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if ok && !blocked(k) {
			env[k] = v
		}
	}
	for k, v := range settings {
		if validName(k) && !Manager(k) {
			env[k] = v
		}
	}
	for k, v := range extra {
		if validName(k) && !blocked(k) {
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

func validName(k string) bool { return k != "" && !strings.ContainsAny(k, "=\x00") }
