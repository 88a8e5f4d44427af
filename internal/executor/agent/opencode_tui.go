package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"time"
)

// opencodeScreen is `opencode -m agor/MODEL [--session ID] [--prompt P]`,
// after the headless Setup (its configuration, the locked server).
var opencodeScreen = &ACPScreen{
	Args: func(req Request, _ []string) []string {
		model := req.Model
		if model == "" {
			model = OpencodeDefaultModel
		}
		args := []string{"-m", "agor/" + model}
		if req.Resume != "" {
			args = append(args, "--session", req.Resume)
		}
		if req.Prompt != "" {
			args = append(args, "--prompt", req.Prompt)
		}
		return args
	},
	Session: opencodeScreenSession,
}

// opencodeListWait bounds `opencode session list` after the UI.
const opencodeListWait = 30 * time.Second

// opencodeScreenSession asks opencode for its sessions (`session list
// --format json`, run as the UI ran: through req.Wrap, since a confined
// UI's state is what it reads) and takes this directory's updated last,
// since the UI started; the resumed one when there is none.
func opencodeScreenSession(req Request, s Screen) string {
	argv := []string{req.Binary, "session", "list", "--format", "json", "-n", "20"}
	if req.Wrap != nil {
		argv = req.Wrap(argv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opencodeListWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = req.Cwd, s.Env
	var out bytes.Buffer
	cmd.Stdout = &limited{w: &out, n: 1 << 20}
	if cmd.Run() != nil {
		return req.Resume
	}
	var list []struct {
		ID        string `json:"id"`
		Directory string `json:"directory"`
		Updated   int64  `json:"updated"`
	}
	if json.Unmarshal(out.Bytes(), &list) != nil {
		return req.Resume
	}
	best, id := s.Started.UnixMilli(), req.Resume
	for _, x := range list {
		if filepath.Clean(x.Directory) == filepath.Clean(req.Cwd) && x.Updated >= best {
			best, id = x.Updated, x.ID
		}
	}
	return id
}

// limited writes at most n bytes to w, dropping the rest.
type limited struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if len(p) > l.n {
		_, _ = l.w.Write(p[:l.n])
		l.n = 0
		return len(p), nil
	}
	l.n -= len(p)
	return l.w.Write(p)
}
