package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// The configuration keys that give work its level when it names none: a
// prompt's (the daemon resolves sandbox.PromptLevel, then Resolve), and
// exec's and a terminal's (Resolve alone). TestHelpDefaults binds them to
// what the code does.
const (
	promptLevelKey = "sandbox.prompts"
	workLevelKey   = "sandbox.default"
)

// packagedPrompts is packaging/config.yaml's sandbox.prompts, as the help
// says it (TestHelpDefaults reads the file).
const packagedPrompts = "workspace"

// sandboxHelp says what --sandbox does, for the commands that take it;
// the defaults are the configuration's own (config.Default).
var sandboxHelp = `--sandbox confines the process and all it starts in a view of the
filesystem the kernel builds for it before it starts: a mount namespace of
its own (in user, PID and IPC namespaces) where every mount is read-only
but the paths it may write, with Landlock and a seccomp filter beneath.
"workspace" lets it write only beneath its working directory (a project,
never the home), the agent CLI's own state, a private temp directory (its
/tmp) and the operator's sandbox.extra_writable, and keeps git's config
and hooks and the agents' project settings there read-only; "read-only"
writes only the state and temp; "off" as the user may. Reads are the
user's.

` + sandboxDefaults() + `

The levels a request may ask for, the defaults, and what a host without
user namespaces or Landlock means (sandbox.required true: refuse; false:
run with what remains, Landlock and the filter or nothing, and say so) are
the operator's (sandbox in /etc/agor/config.yaml). With a prompt, the
sandbox holds whatever the permission mode approves, bypassPermissions
included: the agent runs its tools without asking, but they still cannot
write outside the workspace.`

// sandboxDefaults says which key gives which work its level, and the
// built-in values (config.Default) and the packaged file's.
func sandboxDefaults() string {
	d := config.Default().Sandbox
	prompts := "is empty"
	if d.Prompts != "" {
		prompts = fmt.Sprintf("is %q", d.Prompts)
	}
	return wrap(fmt.Sprintf(`Asking for no level, a prompt or an agent session gets the daemon's %s
(when that is empty, %s), an exec or a terminal %s. Built in, %s is %q, %s %s and
sandbox.required is %v; the packaged /etc/agor/config.yaml sets prompts: %s.`,
		promptLevelKey, workLevelKey, workLevelKey, workLevelKey, d.Default, promptLevelKey, prompts, d.Required, packagedPrompts), helpWidth)
}

// helpWidth is where the help's generated paragraphs wrap, as the
// written ones do.
const helpWidth = 76

// wrap fills s's words into lines of at most width columns.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		switch {
		case n == 0:
		case n+1+len(w) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// workspaceCwd refuses --sandbox workspace without a project: at the home
// directory everything of the user's would be writable. The daemon and
// the executor refuse it too; this says so before anything is sent.
// fromShell: the home is where this shell stands.
func workspaceCwd(level, cwd string, fromShell bool) error {
	if level != string(sandbox.Workspace) || !sandbox.PlainHome(cwd) {
		return nil
	}
	if fromShell {
		return usageErrorf("--sandbox workspace needs a project directory, and this shell is in the home directory: cd into a project, or pass --cwd ~/src/app")
	}
	return usageErrorf("--sandbox workspace needs a project directory: name it with --cwd (the workspace would be the whole home)")
}

// homeHint adds to the daemon's refusal of work at the home (its
// workspace level, asked for by nobody here: sandbox.prompts) what to do,
// when the home was this shell's directory.
func homeHint(err error, cwd string, fromShell bool) error {
	var e *apiclient.Error
	if !fromShell || cwd != "." || !errors.As(err, &e) || !strings.Contains(e.Message, "cwd") {
		return err
	}
	return fmt.Errorf("%w\nthis shell is in the home directory, which that level refuses: cd into a project, or pass --cwd ~/src/app", err)
}

// sandboxWarning says, where a person sees it, that a sandbox level asked
// for was not enforced (the host cannot confine and the configuration
// lets such work run unconfined).
func sandboxWarning(w io.Writer, got *protocol.SandboxInfo) {
	if got == nil {
		return
	}
	if !got.Enforced && got.Warning != "" {
		fmt.Fprintf(w, "warning: sandbox %s not enforced: %s\n", got.Level, got.Warning)
	}
	for _, u := range got.Undone {
		if strings.Contains(u, ": ") { // "PATH: why (disabled: ...)", the guard's sweep
			fmt.Fprintf(w, "warning: disabled what the confined command left that would run later outside the sandbox: %s\n", u)
			continue
		}
		fmt.Fprintf(w, "warning: undid the confined command's change to .git/%s: git would have run it outside the sandbox\n", u)
	}
}
