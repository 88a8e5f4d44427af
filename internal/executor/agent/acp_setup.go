package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Getenv is key's value in an environment list ("" when absent; the last
// one wins, as exec's does).
func Getenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// acpSetenv sets key=value in env, replacing an earlier value.
func acpSetenv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// acpWriteFile writes data to path atomically (a temporary file renamed
// into place), creating its directory; the file is the user's own (0600).
func acpWriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".agor-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// acpHome is the agent's HOME from its environment.
func acpHome(req *Request) (string, error) {
	home := Getenv(req.Env, "HOME")
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("no absolute HOME in the agent's environment (%q)", home)
	}
	return home, nil
}
