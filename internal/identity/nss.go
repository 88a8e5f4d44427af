package identity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// NSS looks accounts up through getent, which runs the NSS modules the
// host's nsswitch.conf names (files, ldap, sss, systemd, ...).
type NSS struct {
	// Getent is the getent binary (default: found on PATH, else /usr/bin/getent).
	Getent string
}

// Name says which database this is.
func (NSS) Name() string { return "nss" }

func (n NSS) bin() string {
	if n.Getent != "" {
		return n.Getent
	}
	if p, err := exec.LookPath("getent"); err == nil {
		return p
	}
	return "/usr/bin/getent"
}

// getent runs getent DB KEY and returns its one line. Exit 2 is getent's
// "not found".
func (n NSS) getent(ctx context.Context, db, key string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, n.bin(), db, "--", key)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		return "", ErrNotFound
	case ctx.Err() != nil:
		return "", fmt.Errorf("%w: getent %s: %v", ErrUnavailable, db, ctx.Err())
	case err != nil:
		return "", fmt.Errorf("%w: getent %s: %v %s", ErrUnavailable, db, err, strings.TrimSpace(errb.String()))
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	return line, nil
}

// UserByName looks name up in the passwd database.
func (n NSS) UserByName(ctx context.Context, name string) (User, error) {
	line, err := n.getent(ctx, "passwd", name)
	if err != nil {
		return User{}, err
	}
	u, err := parsePasswd(line)
	if err == nil && u.Name != name {
		err = fmt.Errorf("%w: getent passwd %q answered for %q", ErrUnavailable, name, u.Name)
	}
	return u, err
}

// UserByUID looks uid up in the passwd database.
func (n NSS) UserByUID(ctx context.Context, uid uint32) (User, error) {
	line, err := n.getent(ctx, "passwd", strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return User{}, err
	}
	u, err := parsePasswd(line)
	if err == nil && u.UID != uid {
		err = fmt.Errorf("%w: getent passwd %d answered for uid %d", ErrUnavailable, uid, u.UID)
	}
	return u, err
}

// GroupByName looks name up in the group database.
func (n NSS) GroupByName(ctx context.Context, name string) (Group, error) {
	g, err := n.group(ctx, name)
	if err == nil && g.Name != name {
		err = fmt.Errorf("%w: getent group %q answered for %q", ErrUnavailable, name, g.Name)
	}
	return g, err
}

// GroupByGID looks gid up in the group database.
func (n NSS) GroupByGID(ctx context.Context, gid uint32) (Group, error) {
	g, err := n.group(ctx, strconv.FormatUint(uint64(gid), 10))
	if err == nil && g.GID != gid {
		err = fmt.Errorf("%w: getent group %d answered for gid %d", ErrUnavailable, gid, g.GID)
	}
	return g, err
}

// group reads the group line getent gives for key (a name or a gid).
func (n NSS) group(ctx context.Context, key string) (Group, error) {
	line, err := n.getent(ctx, "group", key)
	if err != nil {
		return Group{}, err
	}
	f := strings.Split(line, ":")
	if len(f) < 3 || f[0] == "" {
		return Group{}, fmt.Errorf("%w: getent group %q: malformed line %q", ErrUnavailable, key, line)
	}
	gid, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil {
		return Group{}, fmt.Errorf("%w: getent group %q: gid %q", ErrUnavailable, key, f[2])
	}
	return Group{Name: f[0], GID: uint32(gid)}, nil
}

// GroupIDs asks NSS for u's supplementary groups (getent initgroups, as
// login does) and adds the primary one.
func (n NSS) GroupIDs(ctx context.Context, u User) ([]uint32, error) {
	line, err := n.getent(ctx, "initgroups", u.Name)
	if err != nil {
		return nil, err
	}
	f := strings.Fields(line)
	ids := []uint32{u.GID}
	for _, s := range f[min(1, len(f)):] {
		gid, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: getent initgroups %q: gid %q", ErrUnavailable, u.Name, s)
		}
		ids = append(ids, uint32(gid))
	}
	return ids, nil
}

// parsePasswd reads one passwd line: name:pw:uid:gid:gecos:home:shell.
func parsePasswd(line string) (User, error) {
	f := strings.Split(line, ":")
	if len(f) != 7 {
		return User{}, fmt.Errorf("%w: malformed passwd line %q", ErrUnavailable, line)
	}
	uid, err1 := strconv.ParseUint(f[2], 10, 32)
	gid, err2 := strconv.ParseUint(f[3], 10, 32)
	if err1 != nil || err2 != nil || f[0] == "" {
		return User{}, fmt.Errorf("%w: malformed passwd line %q", ErrUnavailable, line)
	}
	return User{Name: f[0], UID: uint32(uid), GID: uint32(gid), Home: f[5], Shell: f[6]}, nil
}
