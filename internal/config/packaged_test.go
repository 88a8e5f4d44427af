package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The packaged file's sandbox section comments out each key it leaves at
// the default ("#  default: off  # ..."): each of those values is the
// built-in one, so what the comments say is what a missing key means.
func TestPackagedSandboxComments(t *testing.T) {
	data, err := os.ReadFile("../../packaging/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`^#  ([a-z_]+): (.*?)(\s+#.*)?$`)
	in, n := false, 0
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "sandbox:":
			in = true
			continue
		case !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#  "):
			in = false
		}
		m := key.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		n++
		c, err := Parse(strings.NewReader("sandbox:\n  " + m[1] + ": " + m[2] + "\n"))
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		if !reflect.DeepEqual(emptyNil(c.Sandbox), emptyNil(Default().Sandbox)) {
			t.Errorf("packaging/config.yaml says %s: %s, the default; built in it is %+v", m[1], m[2], Default().Sandbox)
		}
	}
	if n < 5 {
		t.Fatalf("only %d commented sandbox keys found in packaging/config.yaml", n)
	}
}

// emptyNil is s with empty lists nil: "[]" in the file is no list.
func emptyNil(s Sandbox) Sandbox {
	if len(s.Allowed) == 0 {
		s.Allowed = nil
	}
	if len(s.ExtraWritable) == 0 {
		s.ExtraWritable = nil
	}
	return s
}
