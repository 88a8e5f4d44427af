package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/lifecycle"
)

// backendFlags are shared by ensure, stop and list.
type backendFlags struct {
	config   string
	backend  string
	binary   string
	timeout  time.Duration
	jsonMode bool
}

func (b *backendFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.config, "config", config.DefaultPath, "daemon configuration `file` (execution: section)")
	fs.StringVar(&b.backend, "backend", "", "systemd or direct (default: the configuration's execution.backend)")
	fs.StringVar(&b.binary, "executor", "/usr/libexec/agor/agor-executor", "agor-executor `path`, for the direct backend")
	fs.DurationVar(&b.timeout, "timeout", 30*time.Second, "give up after this `duration`")
	fs.BoolVar(&b.jsonMode, "json", false, "print JSON lines")
}

func (b *backendFlags) open() (lifecycle.Backend, func(), error) {
	cfg, err := config.Load(b.config)
	if err != nil {
		return nil, nil, err
	}
	e := cfg.Execution
	pol := lifecycle.Policy{MinUID: e.MinUID, AllowedUsers: e.AllowedUsers, AllowedGroups: e.AllowedGroups, SocketTemplate: e.SocketPathTemplate}
	kind := e.Backend
	if b.backend != "" {
		kind = b.backend
	}
	switch kind {
	case "systemd":
		s := &lifecycle.Systemd{Policy: pol}
		return s, s.Close, nil
	case "direct":
		d := &lifecycle.Direct{Policy: pol, Binary: b.binary}
		return d, func() {}, nil // executors outlive this command until idle
	}
	return nil, nil, fmt.Errorf("unknown backend %q (want systemd or direct)", kind)
}

// executorEnsure brings up each user's executor (concurrently) and pings it.
func executorEnsure(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agorctl executor ensure", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var bf backendFlags
	bf.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "agorctl executor ensure: name at least one USER")
		return 2
	}
	be, closeBe, err := bf.open()
	if err != nil {
		fmt.Fprintln(stderr, "agorctl executor ensure:", err)
		return 2
	}
	defer closeBe()
	ctx, cancel := context.WithTimeout(ctx, bf.timeout)
	defer cancel()

	results := make([]string, fs.NArg())
	errs := make([]error, fs.NArg())
	var wg sync.WaitGroup
	for i, u := range fs.Args() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = ensureOne(ctx, be, u)
		}()
	}
	wg.Wait()
	return report(fs.Args(), results, errs, stdout, stderr)
}

func ensureOne(ctx context.Context, be lifecycle.Backend, user string) (string, error) {
	ex, err := be.Ensure(ctx, user)
	if err != nil {
		return "", err
	}
	res, err := ping(ctx, ex.Socket)
	if err != nil {
		return "", err
	}
	return string(res), nil
}

func report(users, results []string, errs []error, stdout, stderr io.Writer) int {
	code := 0
	for i, u := range users {
		if errs[i] != nil {
			fmt.Fprintf(stderr, "%s: %v\n", u, errs[i])
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "%s %s\n", u, results[i])
	}
	return code
}

func executorStop(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agorctl executor stop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var bf backendFlags
	bf.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	be, closeBe, err := bf.open()
	if err != nil {
		fmt.Fprintln(stderr, "agorctl executor stop:", err)
		return 2
	}
	defer closeBe()
	ctx, cancel := context.WithTimeout(ctx, bf.timeout)
	defer cancel()
	code := 0
	for _, u := range fs.Args() {
		if err := be.Stop(ctx, u); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", u, err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "%s stopped\n", u)
	}
	return code
}

func executorList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agorctl executor list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var bf backendFlags
	bf.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	be, closeBe, err := bf.open()
	if err != nil {
		fmt.Fprintln(stderr, "agorctl executor list:", err)
		return 2
	}
	defer closeBe()
	ctx, cancel := context.WithTimeout(ctx, bf.timeout)
	defer cancel()
	list, err := be.List(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "agorctl executor list:", err)
		return 1
	}
	if bf.jsonMode {
		enc := json.NewEncoder(stdout)
		for _, st := range list {
			_ = enc.Encode(st)
		}
		return 0
	}
	fmt.Fprintf(stdout, "%-20s %-10s %s\n", "USER", "SOCKET", "SERVICE")
	for _, st := range list {
		fmt.Fprintf(stdout, "%-20s %-10s %s\n", st.User, st.Socket, st.Service)
	}
	return 0
}

// parseFlags parses; ok=false means return code now.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}
