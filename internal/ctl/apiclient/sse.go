package apiclient

import (
	"bufio"
	"io"
	"strings"
)

// readSSE reads Server-Sent Events from r and hands each (its id, event
// name and data) to fn, until fn returns false or r ends.
func readSSE(r io.Reader, fn func(id, name, data string) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 32<<20)
	var id, name, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name != "" || data != "" {
				if !fn(id, name, data) {
					return nil
				}
			}
			name, data = "", ""
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			name = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	return sc.Err()
}
