package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// DefaultAPISocket is where agor-daemon.socket listens.
const DefaultAPISocket = "/run/agor/daemon.sock"

// apiClient talks HTTP to the daemon over its Unix socket; the daemon
// knows the caller by SO_PEERCRED, so there is nothing to log in with.
type apiClient struct {
	socket string
	http   *http.Client
}

func newAPIClient(socket string) *apiClient {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}
	return &apiClient{socket: socket, http: &http.Client{Transport: tr}}
}

// apiError is the daemon's JSON error, kept whole for --json output.
type apiError struct {
	Status  int
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (%s)", e.Message, e.Reason) }

// do sends body (nil: none) and decodes a 2xx reply into out.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://agor"+path, rd)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("daemon at %s: %w (is agor-daemon running?)", c.socket, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error apiError }
		if json.Unmarshal(data, &e) != nil || e.Error.Message == "" {
			return fmt.Errorf("daemon: %s: %s", resp.Status, strings.TrimSpace(string(data)))
		}
		e.Error.Status = resp.StatusCode
		return &e.Error
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// apiFlags are every daemon command's flags.
type apiFlags struct {
	socket  string
	timeout time.Duration
}

func (a *apiFlags) register(fs *flag.FlagSet) {
	def := DefaultAPISocket
	if v := os.Getenv("AGOR_SOCKET"); v != "" {
		def = v
	}
	fs.StringVar(&a.socket, "api", def, "the daemon's API socket `path` (environment AGOR_SOCKET)")
	fs.DurationVar(&a.timeout, "timeout", 60*time.Second, "give up after this `duration`")
}

// parseAPI parses a daemon command's flags; ok false means exit with code.
func parseAPI(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*apiFlags, []string, int, bool) {
	fs := flag.NewFlagSet("agorctl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var a apiFlags
	a.register(fs)
	if extra != nil {
		extra(fs)
	}
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, 0, false
		}
		return nil, nil, 2, false
	}
	return &a, rest, 0, true
}

// parseInterspersed lets options follow operands (agorctl prompt alice
// "text" --mode plan), as people type them; "--" ends the options, and
// what follows it is kept whole (agorctl exec alice -- ls -l).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for len(args) > 0 {
		if args[0] == "--" {
			return append(rest, args[1:]...), nil
		}
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" {
			return append(rest, left...), nil // Parse ate the "--"
		}
		if len(left) == 0 {
			break
		}
		rest, args = append(rest, left[0]), left[1:]
	}
	return rest, nil
}

func (a *apiFlags) client(ctx context.Context) (*apiClient, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	return newAPIClient(a.socket), ctx, cancel
}

// fail prints err for a command and returns its exit status.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "agorctl %s: %v\n", cmd, err)
	return 1
}

// executorsCmd: agorctl executors [list] | start USER... | stop USER...
func executorsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	verb := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	a, rest, code, ok := parseAPI("executors "+verb, args, stderr, nil)
	if !ok {
		return code
	}
	c, ctx, cancel := a.client(ctx)
	defer cancel()
	switch verb {
	case "list":
		var out json.RawMessage
		if err := c.do(ctx, "GET", "/v1/executors", nil, &out); err != nil {
			return fail(stderr, "executors list", err)
		}
		fmt.Fprintln(stdout, string(out))
		return 0
	case "start", "stop":
		if len(rest) == 0 {
			fmt.Fprintf(stderr, "agorctl executors %s: name at least one USER\n", verb)
			return 2
		}
		return forEachUser(ctx, c, verb, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "agorctl executors: unknown verb %q (list, start, stop)\n", verb)
	return 2
}

// forEachUser starts or stops every user's executor at once, printing
// "USER {reply}" lines; the status is 1 if any failed.
func forEachUser(ctx context.Context, c *apiClient, verb string, users []string, stdout, stderr io.Writer) int {
	method := map[string]string{"start": "PUT", "stop": "DELETE"}[verb]
	var mu sync.Mutex
	var wg sync.WaitGroup
	code := 0
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out json.RawMessage
			err := c.do(ctx, method, "/v1/executors/"+url.PathEscape(u), nil, &out)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fmt.Fprintf(stderr, "agorctl executors %s %s: %v\n", verb, u, err)
				code = 1
				return
			}
			fmt.Fprintf(stdout, "%s %s\n", u, out)
		}()
	}
	wg.Wait()
	return code
}

// execCmd: agorctl exec [--cwd DIR] USER -- ARGV...; prints the command's
// output and exits with its status.
func execCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cwd string
	var limit time.Duration
	a, rest, code, ok := parseAPI("exec", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&cwd, "cwd", ".", "working `directory`, relative to the executor's root (the user's home)")
		fs.DurationVar(&limit, "limit", 0, "the command's own time limit (0: none but --timeout)")
	})
	if !ok {
		return code
	}
	if len(rest) > 0 && rest[0] != "--" && len(rest) > 1 && rest[1] == "--" {
		rest = append(rest[:1], rest[2:]...)
	}
	if len(rest) < 2 {
		fmt.Fprintln(stderr, "agorctl exec: usage: agorctl exec [OPTIONS] USER -- COMMAND [ARG...]")
		return 2
	}
	c, ctx, cancel := a.client(ctx)
	defer cancel()
	params := map[string]any{"argv": rest[1:], "cwd": cwd, "timeout_ms": limit.Milliseconds()}
	var res struct {
		ExitCode int    `json:"exit_code"`
		Signal   string `json:"signal"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	if err := c.do(ctx, "POST", "/v1/executors/"+url.PathEscape(rest[0])+"/exec", params, &res); err != nil {
		return fail(stderr, "exec", err)
	}
	io.WriteString(stdout, res.Stdout)
	io.WriteString(stderr, res.Stderr)
	if res.Signal != "" {
		fmt.Fprintf(stderr, "agorctl exec: killed by %s\n", res.Signal)
		return 128 + 9
	}
	return res.ExitCode
}

// credsCmd: agorctl creds set NAME [--daemon] (value read from stdin, so
// it never shows in ps or shell history) | creds delete NAME [--daemon].
func credsCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 || (args[0] != "set" && args[0] != "delete") {
		fmt.Fprintln(stderr, "agorctl creds: usage: agorctl creds set|delete NAME [--daemon]")
		return 2
	}
	verb, name := args[0], args[1]
	var daemonWide bool
	a, _, code, ok := parseAPI("creds "+verb, args[2:], stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&daemonWide, "daemon", false, "the daemon-wide key every user falls back to (root and admins only)")
	})
	if !ok {
		return code
	}
	scope := "user"
	if daemonWide {
		scope = "daemon"
	}
	c, ctx, cancel := a.client(ctx)
	defer cancel()
	path := "/v1/credentials/" + url.PathEscape(name)
	if verb == "delete" {
		if err := c.do(ctx, "DELETE", path+"?scope="+scope, nil, nil); err != nil {
			return fail(stderr, "creds delete", err)
		}
		return 0
	}
	value, err := bufio.NewReader(stdin).ReadString('\n')
	value = strings.TrimRight(value, "\r\n")
	if value == "" {
		if err == nil || errors.Is(err, io.EOF) {
			err = errors.New("no value on standard input")
		}
		return fail(stderr, "creds set", err)
	}
	if err := c.do(ctx, "PUT", path, map[string]string{"value": value, "scope": scope}, nil); err != nil {
		return fail(stderr, "creds set", err)
	}
	fmt.Fprintf(stdout, "%s set (%s)\n", name, scope)
	return 0
}

// auditCmd: agorctl audit [--user U] [--action A] [--limit N], one JSON
// record a line.
func auditCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	q := url.Values{}
	var user, action, task string
	var limit int
	a, _, code, ok := parseAPI("audit", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&user, "user", "", "only this user's records (admins; others see only their own)")
		fs.StringVar(&action, "action", "", "only this action, e.g. api_key_issued, rate_limited")
		fs.StringVar(&task, "task", "", "only this task")
		fs.IntVar(&limit, "limit", 100, "the newest N records (0: all kept)")
	})
	if !ok {
		return code
	}
	for k, v := range map[string]string{"user": user, "action": action, "task": task} {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set("limit", fmt.Sprint(limit))
	c, ctx, cancel := a.client(ctx)
	defer cancel()
	var out struct{ Records []json.RawMessage }
	if err := c.do(ctx, "GET", "/v1/audit?"+q.Encode(), nil, &out); err != nil {
		return fail(stderr, "audit", err)
	}
	for _, r := range out.Records {
		fmt.Fprintln(stdout, string(r))
	}
	return 0
}

// permissionsCmd: agorctl permissions [list] | approve ID | deny ID [--reason R].
func permissionsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	verb := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	var id string
	if verb != "list" && len(args) > 0 {
		id, args = args[0], args[1:]
	}
	var reason string
	a, _, code, ok := parseAPI("permissions "+verb, args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&reason, "reason", "", "why, told to the agent")
	})
	if !ok {
		return code
	}
	c, ctx, cancel := a.client(ctx)
	defer cancel()
	switch {
	case verb == "list":
		var out struct{ Permissions []json.RawMessage }
		if err := c.do(ctx, "GET", "/v1/permissions", nil, &out); err != nil {
			return fail(stderr, "permissions", err)
		}
		for _, p := range out.Permissions {
			fmt.Fprintln(stdout, string(p))
		}
		return 0
	case (verb == "approve" || verb == "deny") && id != "":
		body := map[string]any{"approved": verb == "approve", "reason": reason}
		if err := c.do(ctx, "POST", "/v1/permissions/"+url.PathEscape(id), body, nil); err != nil {
			return fail(stderr, "permissions "+verb, err)
		}
		return 0
	}
	fmt.Fprintln(stderr, "agorctl permissions: usage: agorctl permissions [list] | approve ID | deny ID [--reason R]")
	return 2
}
