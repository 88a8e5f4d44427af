package identity

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// MultiplexerSocket is systemd-userdbd's socket that asks every user
// database the host has (its own records, NSS, dynamic users) at once.
const MultiplexerSocket = "/run/systemd/userdb/io.systemd.Multiplexer"

// Userdb looks accounts up in systemd's user database over varlink
// (io.systemd.UserDatabase, through the multiplexer).
type Userdb struct {
	Socket string // default MultiplexerSocket
}

// Name says which database this is.
func (Userdb) Name() string { return "userdb" }

// Detect returns Userdb when systemd-userdbd's multiplexer is there, and
// NSS otherwise.
func Detect() Source {
	if fi, err := os.Stat(MultiplexerSocket); err == nil && fi.Mode().Type() == os.ModeSocket {
		return Userdb{}
	}
	return NSS{}
}

func (d Userdb) socket() string {
	if d.Socket != "" {
		return d.Socket
	}
	return MultiplexerSocket
}

// maxReply bounds one varlink reply (a user record with its privileged
// section is a few KiB).
const maxReply = 1 << 20

type varlinkReply struct {
	Parameters json.RawMessage `json:"parameters"`
	Continues  bool            `json:"continues"`
	Error      string          `json:"error"`
}

// call sends one varlink request and hands each reply to f until the last.
// "No record" errors are ErrNotFound; anything else is ErrUnavailable.
func (d Userdb) call(ctx context.Context, method string, params map[string]any, more bool, f func(json.RawMessage) error) error {
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "unix", d.socket())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer c.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(deadline)
	} else {
		_ = c.SetDeadline(time.Now().Add(Timeout))
	}
	params["service"] = "io.systemd.Multiplexer"
	req, _ := json.Marshal(map[string]any{"method": method, "parameters": params, "more": more})
	if _, err := c.Write(append(req, 0)); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, method, err)
	}
	return readReplies(bufio.NewReader(c), method, f)
}

// readReplies reads NUL-terminated varlink replies.
func readReplies(r *bufio.Reader, method string, f func(json.RawMessage) error) error {
	for {
		msg, err := readMessage(r)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrUnavailable, method, err)
		}
		var rep varlinkReply
		if err := json.Unmarshal(msg, &rep); err != nil {
			return fmt.Errorf("%w: %s: bad reply: %v", ErrUnavailable, method, err)
		}
		switch rep.Error {
		case "":
		case "io.systemd.UserDatabase.NoRecordFound":
			return ErrNotFound
		default:
			return fmt.Errorf("%w: %s: %s", ErrUnavailable, method, rep.Error)
		}
		if err := f(rep.Parameters); err != nil {
			return err
		}
		if !rep.Continues {
			return nil
		}
	}
}

// readMessage reads up to the next NUL, refusing a reply over maxReply.
func readMessage(r *bufio.Reader) ([]byte, error) {
	var buf bytes.Buffer
	for {
		chunk, err := r.ReadSlice(0)
		if buf.Len()+len(chunk) > maxReply {
			return nil, errors.New("reply too large")
		}
		buf.Write(chunk)
		switch {
		case err == nil:
			return buf.Bytes()[:buf.Len()-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

type userRecord struct {
	Record struct {
		UserName      string  `json:"userName"`
		UID           *uint32 `json:"uid"`
		GID           *uint32 `json:"gid"`
		HomeDirectory string  `json:"homeDirectory"`
		Shell         string  `json:"shell"`
	} `json:"record"`
}

func (d Userdb) user(ctx context.Context, params map[string]any) (User, error) {
	var u User
	err := d.call(ctx, "io.systemd.UserDatabase.GetUserRecord", params, false, func(p json.RawMessage) error {
		var r userRecord
		if err := json.Unmarshal(p, &r); err != nil || r.Record.UserName == "" || r.Record.UID == nil {
			return fmt.Errorf("%w: GetUserRecord: incomplete record", ErrUnavailable)
		}
		gid := *r.Record.UID // systemd: no gid means the uid's own group
		if r.Record.GID != nil {
			gid = *r.Record.GID
		}
		u = User{Name: r.Record.UserName, UID: *r.Record.UID, GID: gid, Home: r.Record.HomeDirectory, Shell: r.Record.Shell}
		return nil
	})
	return u, err
}

// UserByName looks name up.
func (d Userdb) UserByName(ctx context.Context, name string) (User, error) {
	u, err := d.user(ctx, map[string]any{"userName": name})
	if err == nil && u.Name != name {
		err = fmt.Errorf("%w: userdb answered %q for %q", ErrUnavailable, u.Name, name)
	}
	return u, err
}

// UserByUID looks uid up.
func (d Userdb) UserByUID(ctx context.Context, uid uint32) (User, error) {
	u, err := d.user(ctx, map[string]any{"uid": uid})
	if err == nil && u.UID != uid {
		err = fmt.Errorf("%w: userdb answered uid %d for %d", ErrUnavailable, u.UID, uid)
	}
	return u, err
}

// GroupByName looks name up.
func (d Userdb) GroupByName(ctx context.Context, name string) (Group, error) {
	g, err := d.group(ctx, map[string]any{"groupName": name})
	if err == nil && g.Name != name {
		err = fmt.Errorf("%w: GetGroupRecord %q: answered for %q", ErrUnavailable, name, g.Name)
	}
	return g, err
}

// GroupByGID looks gid up.
func (d Userdb) GroupByGID(ctx context.Context, gid uint32) (Group, error) {
	g, err := d.group(ctx, map[string]any{"gid": gid})
	if err == nil && g.GID != gid {
		err = fmt.Errorf("%w: GetGroupRecord %d: answered for gid %d", ErrUnavailable, gid, g.GID)
	}
	return g, err
}

func (d Userdb) group(ctx context.Context, params map[string]any) (Group, error) {
	var g Group
	err := d.call(ctx, "io.systemd.UserDatabase.GetGroupRecord", params, false, func(p json.RawMessage) error {
		var r struct {
			Record struct {
				GroupName string  `json:"groupName"`
				GID       *uint32 `json:"gid"`
			} `json:"record"`
		}
		if err := json.Unmarshal(p, &r); err != nil || r.Record.GroupName == "" || r.Record.GID == nil {
			return fmt.Errorf("%w: GetGroupRecord: incomplete record", ErrUnavailable)
		}
		g = Group{Name: r.Record.GroupName, GID: *r.Record.GID}
		return nil
	})
	return g, err
}

// GroupIDs lists u's memberships (GetMemberships) with its primary group.
func (d Userdb) GroupIDs(ctx context.Context, u User) ([]uint32, error) {
	var names []string
	err := d.call(ctx, "io.systemd.UserDatabase.GetMemberships", map[string]any{"userName": u.Name}, true, func(p json.RawMessage) error {
		var m struct {
			GroupName string `json:"groupName"`
		}
		if err := json.Unmarshal(p, &m); err != nil {
			return fmt.Errorf("%w: GetMemberships: %v", ErrUnavailable, err)
		}
		names = append(names, m.GroupName)
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) { // no memberships at all
		return nil, err
	}
	ids := []uint32{u.GID}
	for _, n := range names {
		g, err := d.GroupByName(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, g.GID)
	}
	return ids, nil
}
