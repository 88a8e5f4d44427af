package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// The API's plain routes, one typed method each, so that no program
// outside this package names a path or decodes a reply itself. Methods
// whose reply a command may print as the daemon sent it (--json) return
// it raw as well.

// call sends body (nil: none) and decodes the reply into out, returning
// it raw too. A reply that does not decode (a daemon of another
// version, say) is an error, never an empty value.
func (c *Client) call(ctx context.Context, method, path string, body, out any) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.Do(ctx, method, path, body, &raw); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return raw, fmt.Errorf("the daemon's reply does not decode (%s %s): %w", method, path, err)
	}
	return raw, nil
}

func executorPath(user string) string { return "/v1/executors/" + url.PathEscape(user) }

// Whoami is who the daemon takes the caller for.
func (c *Client) Whoami(ctx context.Context) (apiwire.Whoami, error) {
	var out apiwire.Whoami
	_, err := c.call(ctx, "GET", "/v1/whoami", nil, &out)
	return out, err
}

// Executors lists the executors the caller sees: everyone's for an
// admin, her own for a person.
func (c *Client) Executors(ctx context.Context) (apiwire.ExecutorList, json.RawMessage, error) {
	var out apiwire.ExecutorList
	raw, err := c.call(ctx, "GET", "/v1/executors", nil, &out)
	return out, raw, err
}

// StartExecutor starts user's executor when need be and pings it now.
func (c *Client) StartExecutor(ctx context.Context, user string) (apiwire.ExecutorInfo, json.RawMessage, error) {
	var out apiwire.ExecutorInfo
	raw, err := c.call(ctx, "PUT", executorPath(user), nil, &out)
	return out, raw, err
}

// StopExecutor stops user's executor (socket and service).
func (c *Client) StopExecutor(ctx context.Context, user string) (apiwire.ExecutorStopped, json.RawMessage, error) {
	var out apiwire.ExecutorStopped
	raw, err := c.call(ctx, "DELETE", executorPath(user), nil, &out)
	return out, raw, err
}

// Sessions lists sessions: the caller's own; an admin's everyone's, or
// user's ("": all).
func (c *Client) Sessions(ctx context.Context, user string) (apiwire.SessionList, json.RawMessage, error) {
	var all apiwire.SessionList
	after := ""
	for range maxSessionPages {
		q := url.Values{"limit": {strconv.Itoa(sessionPage)}}
		if user != "" {
			q.Set("user", user)
		}
		if after != "" {
			q.Set("after", after)
		}
		var out apiwire.SessionList
		if _, err := c.call(ctx, "GET", "/v1/sessions?"+q.Encode(), nil, &out); err != nil {
			return all, nil, err
		}
		all.Sessions = append(all.Sessions, out.Sessions...)
		if len(out.Sessions) < sessionPage {
			break
		}
		after = out.Sessions[len(out.Sessions)-1].ID
	}
	raw, err := json.Marshal(all)
	return all, raw, err
}

// The daemon answers at most sessionPage sessions a request, oldest
// first; Sessions follows the pages to the newest (a person's recent
// sessions are the ones she looks for), up to maxSessionPages of them.
const (
	sessionPage     = 1000
	maxSessionPages = 100
)

// Tasks lists session's tasks.
func (c *Client) Tasks(ctx context.Context, session string) (apiwire.TaskList, json.RawMessage, error) {
	var out apiwire.TaskList
	raw, err := c.call(ctx, "GET", "/v1/sessions/"+url.PathEscape(session)+"/tasks", nil, &out)
	return out, raw, err
}

// StopTask asks task's executor to stop it.
// Task is GET /v1/tasks/{id}.
func (c *Client) Task(ctx context.Context, id string) (apiwire.TaskView, error) {
	var out apiwire.TaskView
	_, err := c.call(ctx, "GET", "/v1/tasks/"+url.PathEscape(id), nil, &out)
	return out, err
}

func (c *Client) StopTask(ctx context.Context, task string) (apiwire.StopReply, json.RawMessage, error) {
	var out apiwire.StopReply
	raw, err := c.call(ctx, "POST", "/v1/tasks/"+url.PathEscape(task)+"/stop", nil, &out)
	return out, raw, err
}

// Permissions lists the open permission requests the caller may answer.
func (c *Client) Permissions(ctx context.Context) (apiwire.PermissionList, error) {
	var out apiwire.PermissionList
	_, err := c.call(ctx, "GET", "/v1/permissions", nil, &out)
	return out, err
}

// DecidePermission approves or denies permission request id; reason is
// told to the agent.
func (c *Client) DecidePermission(ctx context.Context, id string, approved bool, reason string) error {
	var out apiwire.PermissionDecided
	body := apiwire.PermissionDecision{Approved: approved, Reason: reason}
	_, err := c.call(ctx, "POST", "/v1/permissions/"+url.PathEscape(id), body, &out)
	return err
}

// AuditQuery selects records of the trail: User's (admins; a person
// gets her own whatever she asks), of Action, of Task, the newest Limit
// (0: all kept).
type AuditQuery struct {
	User, Action, Task string
	Limit              int
}

// Audit reads the audit trail.
func (c *Client) Audit(ctx context.Context, q AuditQuery) (apiwire.AuditList, error) {
	v := url.Values{}
	for k, s := range map[string]string{"user": q.User, "action": q.Action, "task": q.Task} {
		if s != "" {
			v.Set(k, s)
		}
	}
	v.Set("limit", strconv.Itoa(q.Limit))
	var out apiwire.AuditList
	_, err := c.call(ctx, "GET", "/v1/audit?"+v.Encode(), nil, &out)
	return out, err
}

func credentialPath(name string) string { return "/v1/credentials/" + url.PathEscape(name) }

// SetCredential stores the key name: the caller's own, or the
// daemon-wide one (body.Scope apiwire.ScopeDaemon).
func (c *Client) SetCredential(ctx context.Context, name string, body apiwire.CredentialBody) (apiwire.CredentialSet, error) {
	var out apiwire.CredentialSet
	_, err := c.call(ctx, "PUT", credentialPath(name), body, &out)
	return out, err
}

// DeleteCredential removes the key name of scope (apiwire.ScopeUser or
// apiwire.ScopeDaemon).
func (c *Client) DeleteCredential(ctx context.Context, name, scope string) (apiwire.CredentialDeleted, error) {
	var out apiwire.CredentialDeleted
	_, err := c.call(ctx, "DELETE", credentialPath(name)+"?scope="+url.QueryEscape(scope), nil, &out)
	return out, err
}

// Orphans lists what accounts that no longer exist left behind (admins).
func (c *Client) Orphans(ctx context.Context) (apiwire.OrphanList, json.RawMessage, error) {
	var out apiwire.OrphanList
	raw, err := c.call(ctx, "GET", "/v1/accounts/orphans", nil, &out)
	return out, raw, err
}

// PurgeOrphan deletes what name left under uid (-1: not known) and says
// what it deleted (admins).
func (c *Client) PurgeOrphan(ctx context.Context, name string, uid int64) (apiwire.Orphan, error) {
	var out apiwire.Orphan
	path := "/v1/accounts/orphans/" + url.PathEscape(name) + "?uid=" + strconv.FormatInt(uid, 10)
	_, err := c.call(ctx, "DELETE", path, nil, &out)
	return out, err
}
