package agent

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// geminiScreen is `gemini -m M [--resume ID] [-i PROMPT]`, after the
// headless Setup (settings, the trusted workspace, no relaunch).
var geminiScreen = &ACPScreen{
	Args: func(req Request, headless []string) []string {
		args := headless[1:] // not --acp: -m MODEL
		if req.Resume != "" {
			args = append(args, "--resume", req.Resume)
		}
		if req.Prompt != "" {
			args = append(args, "-i", req.Prompt)
		}
		return args
	},
	Session: geminiScreenSession,
}

// geminiScreenSession is the session of the newest record the UI wrote
// (~/.gemini/tmp/PROJECT/chats/session-*.jsonl), by the sessionId its
// first line holds; the resumed one when it wrote none.
func geminiScreenSession(req Request, s Screen) string {
	files, _ := filepath.Glob(filepath.Join(geminiHome(s.Env), ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
	newest, id := time.Time{}, ""
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.ModTime().Before(s.Started) || !fi.ModTime().After(newest) {
			continue
		}
		if sid := geminiRecordSession(f); sid != "" {
			newest, id = fi.ModTime(), sid
		}
	}
	if id == "" {
		return req.Resume
	}
	return id
}

// geminiRecordSession is the sessionId of a record's first line.
func geminiRecordSession(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), geminiRecordLine)
	var head struct {
		SessionID string `json:"sessionId"`
	}
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &head) != nil {
		return ""
	}
	return head.SessionID
}
