// Package umask works out the umask a person logs in with, so that what
// an executor starts for her (agents, terminals, commands) creates files
// as her own login session would, not with the unit's UMask=.
//
// An executor has no PAM session, so it does what pam_umask does on
// Debian and Fedora logins: a "umask=" entry in the account's GECOS field
// first, then UMASK in /etc/login.defs, with USERGROUPS_ENAB's user
// private groups (the group bits made equal to the owner bits when the
// primary group has the account's name), else 022. A umask the person
// sets in her shell's startup files applies to her login shells on top.
package umask

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Default is the umask without login.defs or a GECOS entry.
const Default = 0o022

// Account is what the rules read of an account.
type Account struct {
	Name  string
	UID   uint32
	Group string // the primary group's name
	GECOS string
}

// Login is a's login umask and where it came from, for the log.
// loginDefs is /etc/login.defs's content (nil when missing).
func Login(a Account, loginDefs []byte) (mask uint32, source string) {
	if m, ok := fromGECOS(a.GECOS); ok {
		return m, "the account's GECOS umask="
	}
	mask, source = Default, "the default"
	defs := parseDefs(loginDefs)
	if v, ok := defs["UMASK"]; ok {
		if m, err := parseMask(v); err == nil {
			mask, source = m, "/etc/login.defs UMASK"
		}
	}
	if strings.EqualFold(defs["USERGROUPS_ENAB"], "yes") && a.UID != 0 && a.Group == a.Name {
		mask = mask&^0o070 | (mask>>3)&0o070
		source += " (user private group)"
	}
	return mask, source
}

// fromGECOS finds pam_umask's "umask=" among the GECOS field's commas.
func fromGECOS(gecos string) (uint32, bool) {
	for _, f := range strings.Split(gecos, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(f), "umask="); ok {
			if m, err := parseMask(v); err == nil {
				return m, true
			}
		}
	}
	return 0, false
}

func parseMask(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || n > 0o777 {
		return 0, fmt.Errorf("umask %q: not an octal mode of at most 0777", v)
	}
	return uint32(n), nil
}

// parseDefs reads login.defs: "NAME VALUE" lines, # comments.
func parseDefs(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && !strings.HasPrefix(f[0], "#") {
			out[f[0]] = f[1]
		}
	}
	return out
}

// Getent reads the account of uid through getent (NSS: directory accounts
// too): its passwd entry, then its primary group's name.
func Getent(ctx context.Context, getent string, uid uint32) (Account, error) {
	pw, err := getentLine(ctx, getent, "passwd", strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return Account{}, err
	}
	f := strings.Split(pw, ":") // name:x:uid:gid:gecos:home:shell
	if len(f) < 7 {
		return Account{}, fmt.Errorf("getent passwd %d: %q is not a passwd entry", uid, pw)
	}
	a := Account{Name: f[0], UID: uid, GECOS: f[4]}
	if gr, err := getentLine(ctx, getent, "group", f[3]); err == nil {
		a.Group, _, _ = strings.Cut(gr, ":")
	}
	return a, nil
}

func getentLine(ctx context.Context, getent, db, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, getent, db, key).Output()
	if err != nil {
		return "", fmt.Errorf("getent %s %s: %w", db, key, err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line, nil
}
