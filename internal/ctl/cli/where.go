package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/identity"
)

// whereHelp says whose the work is and where it runs, for the commands
// that run something in a person's executor (prompt, exec, terminal).
const whereHelp = `Whose: yours, unless you name another account; root and members of
api.admin_group may name anyone.

Where: with no --cwd, this shell's working directory, when it lies in
USER's home. Outside it, work you asked for as yourself is refused (cd into
a project, or pass --cwd); work for an account you named runs in its home
directory, as before, which sandbox workspace refuses: root acting for
alice from /root passes --cwd ~alice/src/app. --cwd takes an absolute path
in USER's home, ~/PATH beneath USER's home, or a relative path: from this
shell's directory when that lies in USER's home, otherwise from USER's
home. What is sent is the path relative to USER's home, where the
executor starts.`

// accountBook looks people up: who an operand names, who runs agorctl,
// and where each one's home is.
type accountBook interface {
	LookupName(ctx context.Context, name string) (identity.User, error)
	LookupUID(ctx context.Context, uid uint32) (identity.User, error)
}

// accounts is the system's user database (directory accounts too), and
// getuid the caller's uid; variables for the tests' sake.
var (
	accounts = func() accountBook { return identity.Default() }
	getuid   = os.Getuid
)

// addUserFlag adds --user (-u), the account the work is for.
func addUserFlag(c *cobra.Command, user *string) {
	c.Flags().StringVarP(user, "user", "u", "", "act for this `account` (default: you; root and admins may name anyone)")
}

// whom is the account work is for, and whether it was named (by --user
// or an operand) rather than taken to be the caller.
type whom struct {
	name  string
	uid   uint32 // the caller's, when not named
	named bool
}

// self is the caller, as the system names their uid: Go's own reader
// sees /etc/passwd only, and wants $USER without cgo.
func self(ctx context.Context) (whom, error) {
	u, err := accounts().LookupUID(ctx, uint32(getuid()))
	if err != nil {
		return whom{}, err
	}
	return whom{name: u.Name, uid: u.UID}, nil
}

// isAccount reports whether name is an account on this host; a database
// that does not answer is an error, not a no. A word no account can have
// ("fix the bug": white space) is not asked after.
func isAccount(ctx context.Context, name string) (bool, error) {
	if account.ValidName(name) != nil {
		return false, nil
	}
	_, err := accounts().LookupName(ctx, name)
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return false, nil
	case err != nil:
		return false, usageErrorf("cannot tell whether %q names an account (%v): name the person with --user", name, err)
	}
	return true, nil
}

// userOperand splits the operands of a command whose USER is optional:
// --user names the account (every operand is the command's); otherwise
// the first of at least min operands is USER when it names an account
// (the older form), and the caller when not.
func userOperand(ctx context.Context, flag string, args []string, min int) (whom, []string, error) {
	if flag != "" {
		return whom{name: flag, named: true}, args, nil
	}
	if len(args) >= min {
		ok, err := isAccount(ctx, args[0])
		if err != nil {
			return whom{}, nil, err
		}
		if ok {
			return whom{name: args[0], named: true}, args[1:], nil
		}
	}
	w, err := self(ctx)
	return w, args, err
}

// notRoot refuses work for root unnamed: root has no executor, and would
// otherwise learn so from the daemon's refusal of the account.
func notRoot(w whom, example string) error {
	if !w.named && w.uid == 0 {
		return usageErrorf("you are root, who has no executor: name the person with --user (%s)", example)
	}
	return nil
}

// workDir is the working directory to send for w: cwd (the flag, "" when
// not given) resolved as whereHelp says, relative to w's home.
func workDir(ctx context.Context, w whom, cwd string) (rel string, fromShell bool, err error) {
	u, err := accounts().LookupName(ctx, w.name)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", w.name, err)
	}
	here, herr := os.Getwd()
	inHome := herr == nil && within(u.Home, here) != ""
	switch {
	case cwd == "" && inHome:
		return within(u.Home, here), true, nil
	case cwd == "" && w.named:
		return ".", false, nil
	case cwd == "":
		return "", false, notInHome(w, u.Home, here, herr)
	}
	abs, err := expandCwd(ctx, cwd, u.Home, here, inHome)
	if err != nil {
		return "", false, err
	}
	if rel = within(u.Home, abs); rel == "" {
		return "", false, usageErrorf("--cwd %s is %s, which is not in %s's home (%s)", cwd, abs, w.name, u.Home)
	}
	return rel, false, nil
}

// expandCwd makes a --cwd absolute: ~ and ~NAME are homes; a relative
// path is from here when here is in the home, else from the home.
func expandCwd(ctx context.Context, cwd, home, here string, inHome bool) (string, error) {
	if rest, ok := strings.CutPrefix(cwd, "~"); ok {
		name, sub, _ := strings.Cut(rest, "/")
		if name != "" {
			u, err := accounts().LookupName(ctx, name)
			if err != nil {
				return "", usageErrorf("--cwd %s: %s: %v", cwd, name, err)
			}
			home = u.Home
		}
		return filepath.Join(home, sub), nil
	}
	switch {
	case filepath.IsAbs(cwd):
		return filepath.Clean(cwd), nil
	case inHome:
		return filepath.Join(here, cwd), nil
	}
	return filepath.Join(home, cwd), nil
}

// within is dir relative to home ("." for home itself), or "" when dir
// is not in home, as written or once symbolic links are resolved.
func within(home, dir string) string {
	if home == "" || !filepath.IsAbs(dir) {
		return ""
	}
	if rel := beneath(filepath.Clean(home), filepath.Clean(dir)); rel != "" {
		return rel
	}
	h, err1 := filepath.EvalSymlinks(home)
	d, err2 := filepath.EvalSymlinks(dir)
	if err1 != nil || err2 != nil {
		return ""
	}
	return beneath(h, d)
}

func beneath(home, dir string) string {
	rel, err := filepath.Rel(home, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return rel
}

// notInHome is the refusal of work the caller asked for here, outside
// her home, saying what to type instead.
func notInHome(w whom, home, here string, err error) error {
	if err != nil {
		return usageErrorf("cannot tell this shell's working directory (%v): pass --cwd ~/src/app (a project in your home)", err)
	}
	return usageErrorf("the working directory %s is not in %s's home (%s): cd into a project there, or pass --cwd ~/src/app (a project of yours)", here, w.name, home)
}
