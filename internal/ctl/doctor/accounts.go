package doctor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/identity"
)

// checkAccounts says which user database answers (systemd's userdb over
// varlink, or NSS), whether accounts from a directory are visible through
// it, and whether the configured users and groups exist.
func checkAccounts(ctx context.Context, d *Doctor) Finding {
	if d.ids == nil {
		return skip("no user database to ask")
	}
	src := d.ids.Source()
	if _, err := d.ids.LookupName(ctx, "root"); err != nil {
		return fail("start the host's directory client (nslcd or sssd) or systemd-userdbd, then run agorctl doctor again",
			"user database %s does not answer: %v", src, err)
	}
	var missing []string
	for _, u := range d.allowedUsers() {
		if _, err := d.ids.LookupName(ctx, u); err != nil {
			missing = append(missing, "user "+u)
		}
	}
	for _, g := range d.allowedGroups() {
		if _, err := d.ids.LookupGroup(ctx, g); err != nil {
			missing = append(missing, "group "+g)
		}
	}
	dir := d.directoryUser(ctx)
	if len(missing) > 0 {
		return warn("user database %s; %s; not found: %s (check the names in %s, or the directory client)", src, dir, strings.Join(missing, ", "), d.configPath)
	}
	return ok("user database %s; %s; configured users and groups found", src, dir)
}

func (d *Doctor) allowedUsers() []string {
	if d.cfg == nil {
		return nil
	}
	return d.cfg.Execution.AllowedUsers
}

func (d *Doctor) allowedGroups() []string {
	if d.cfg == nil {
		return nil
	}
	return d.cfg.Execution.AllowedGroups
}

// directoryUser finds an account the system knows that /etc/passwd does
// not (one from a directory), and checks the user database names it.
func (d *Doctor) directoryUser(ctx context.Context) string {
	out, err := d.run(ctx, "getent", "passwd")
	if err != nil {
		return "accounts not listed (getent passwd: " + strings.TrimSpace(err.Error()) + ")"
	}
	local := passwdNames(d.path("/etc/passwd"))
	var found []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 3 && !local[f[0]] && !special(f[0], f[2]) {
			found = append(found, f[0])
		}
	}
	if len(found) == 0 {
		return "no directory accounts visible (only /etc/passwd's)"
	}
	u, err := d.ids.LookupName(ctx, found[0])
	if errors.Is(err, identity.ErrNotFound) || err != nil {
		return fmt.Sprintf("directory account %s listed by NSS but not found by the user database: %v", found[0], err)
	}
	more := ""
	if n := len(found) - 1; n > 0 {
		more = " and " + strconv.Itoa(n) + " more"
	}
	return fmt.Sprintf("directory accounts visible: %s (uid %d)%s", u.Name, u.UID, more)
}

// special: an account no person has, such as a service's DynamicUser=
// (Cockpit's cockpit-wsinstance-https on Debian 13, listed by
// nss-systemd): not from a directory, though /etc/passwd lacks it.
func special(name, uid string) bool {
	n, err := strconv.ParseUint(uid, 10, 32)
	return err != nil || account.Special(name, uint32(n)) != nil
}

func passwdNames(path string) map[string]bool {
	names := map[string]bool{}
	for _, f := range passwdEntries(path) {
		names[f[0]] = true
	}
	return names
}
