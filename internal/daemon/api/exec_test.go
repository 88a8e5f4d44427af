package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestWriteJSONString: written a piece at a time, the string is what
// encoding/json makes of it whole, runes split across pieces included.
func TestWriteJSONString(t *testing.T) {
	long := strings.Repeat("é\x00<", 10000) + "\xff\xfe" + strings.Repeat("日本", 5000)
	for _, in := range []string{"", "plain", "\x00\x01\n\"\\", long, long[1:], "a\xe2\x82"} {
		var b bytes.Buffer
		if err := writeJSONString(&b, []byte(in)); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(in)
		if b.String() != string(want) {
			t.Errorf("%.40q: wrote %.80s, want %.80s", in, b.String(), want)
		}
	}
}
