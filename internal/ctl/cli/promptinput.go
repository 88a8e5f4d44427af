package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// promptInput is where the prompt comes from and whether its agent is
// started while it is read.
type promptInput struct {
	file      string // --file: a file, "-" stdin
	noPrewarm bool
}

func addPromptInputFlags(fs *pflag.FlagSet, in *promptInput) {
	fs.StringVar(&in.file, "file", "", "read the prompt from this `file` (- is stdin); a PROMPT of - alone reads stdin too")
	fs.BoolVar(&in.noPrewarm, "no-prewarm", false, "do not start the agent while the prompt is read from a file or stdin")
}

// maxPromptFile bounds a prompt read from a file or stdin; the daemon
// has its own bound (quotas.max_prompt_bytes) and says so.
const maxPromptFile = 16 << 20

// source is the prompt's file ("" for the words of args), and whether it
// is read at all: "-" alone among the words means stdin.
func (in promptInput) source(words []string) (string, error) {
	switch {
	case in.file != "" && len(words) > 0:
		return "", usageErrorf("give the prompt as words or --file, not both")
	case in.file != "":
		return in.file, nil
	case len(words) == 1 && words[0] == "-":
		return "-", nil
	case len(words) == 0:
		return "", usageErrorf("want [USER] PROMPT... (or --file)")
	}
	return "", nil
}

// read reads the prompt from src (a file, "-" stdin).
func readPrompt(stdin io.Reader, src string) (string, error) {
	r := stdin
	if src != "-" {
		f, err := os.Open(src)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPromptFile+1))
	switch {
	case err != nil:
		return "", err
	case len(b) > maxPromptFile:
		return "", fmt.Errorf("the prompt in %s is over %d bytes", src, maxPromptFile)
	case strings.TrimSpace(string(b)) == "":
		return "", errors.New("the prompt is empty")
	}
	return string(b), nil
}

// prewarmWait bounds the wait for the pre-warm's answer once the prompt
// is read: its reservation must be made before the prompt is admitted,
// or the pre-warmed agent waits for nothing.
const prewarmWait = 10 * time.Second

// prewarmAhead asks the daemon to start body's agent while the prompt
// is read, and returns a wait for its answer. A pre-warm that fails is
// no error: the prompt runs the same without it.
func prewarmAhead(ctx context.Context, c *apiclient.Client, user string, body apiwire.PromptBody) (wait func()) {
	done := make(chan struct{})
	ctx, cancel := context.WithTimeout(ctx, prewarmWait)
	go func() {
		defer close(done)
		_, _ = c.Prewarm(ctx, user, body)
	}()
	return func() { <-done; cancel() }
}

// read fills body.Prompt from a file or stdin when the words say so,
// pre-warming the agent meanwhile (the prompt on the command line is
// there at once: nothing to start ahead of it).
func (in promptInput) read(ctx context.Context, a *app, f *apiFlags, user string, words []string, body *apiwire.PromptBody) error {
	src, err := in.source(words)
	if err != nil || src == "" {
		return err
	}
	wait := func() {}
	if !in.noPrewarm {
		wait = prewarmAhead(ctx, apiclient.New(f.socket), user, *body)
	}
	body.Prompt, err = readPrompt(a.stdin, src)
	wait()
	return err
}
