package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// completions are each command's words: subcommands, then options.
var completions = map[string][]string{
	"":            {"prompt", "sessions", "tasks", "events", "stop", "terminal", "exec", "executors", "creds", "permissions", "audit", "doctor", "executor", "api-token", "completion", "version", "--help"},
	"prompt":      {"--tool", "--cwd", "--mode", "--model", "--session", "--limit", "--json", "--detach", "--api", "--timeout"},
	"sessions":    {"--user", "--json", "--api"},
	"tasks":       {"--json", "--api"},
	"events":      {"--follow", "--after", "--api"},
	"terminal":    {"--cwd", "--shell", "--attach", "--api"},
	"exec":        {"--cwd", "--limit", "--api", "--timeout"},
	"executors":   {"list", "start", "stop", "--api"},
	"creds":       {"set", "delete", "--daemon", "--api"},
	"permissions": {"list", "approve", "deny", "--reason", "--api"},
	"audit":       {"--user", "--action", "--task", "--limit", "--api"},
	"doctor":      {"--json", "--config", "--api"},
	"executor":    {"ping", "ensure", "stop", "list"},
	"completion":  {"bash"},
	"api-token":   {"new", "--config"},
}

// completionCmd: agorctl completion bash — prints a bash completion
// script (the package installs it; by hand: source <(agorctl completion bash)).
func completionCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] != "bash" {
		fmt.Fprintln(stderr, "agorctl completion: usage: agorctl completion bash")
		return 2
	}
	var cases strings.Builder
	for _, cmd := range slices.Sorted(maps.Keys(completions)) {
		if cmd != "" {
			fmt.Fprintf(&cases, "\t\t%s) words=%q ;;\n", cmd, strings.Join(completions[cmd], " "))
		}
	}
	fmt.Fprintf(stdout, `# bash completion for agorctl
_agorctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} words
	if [ "$COMP_CWORD" -eq 1 ]; then
		words=%q
	else
		case ${COMP_WORDS[1]} in
%s		*) words= ;;
		esac
		case $cur in -*|'') ;; *) [ -n "$words" ] && [ "$COMP_CWORD" -gt 2 ] && words= ;; esac
	fi
	COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _agorctl agorctl
`, strings.Join(completions[""], " "), cases.String())
	return 0
}
