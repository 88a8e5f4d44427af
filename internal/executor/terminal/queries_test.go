package terminal

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

const esc = "\x1b"

// Each question a terminal answers is blanked in a replay (as many NULs),
// everything else kept byte for byte.
func TestQuietBlanksQuestions(t *testing.T) {
	asks := []string{
		esc + "[c", esc + "[0c", esc + "[>c", esc + "[>0c", esc + "[=c", // device attributes
		esc + "[6n", esc + "[5n", esc + "[?6n", esc + "[?996n", // reports
		esc + "[?2026$p", esc + "[12$p", // DECRQM
		esc + "[>q", esc + "[>0q", // XTVERSION
		esc + "[?u",                              // kitty keyboard flags
		esc + "[14t", esc + "[18t", esc + "[21t", // window reports
		esc + "]10;?" + "\a", esc + "]11;?" + esc + "\\", // colours
		esc + "]4;1;?\a", esc + "]52;c;?\a", // a palette entry, the clipboard
		esc + "P+q544e" + esc + "\\", esc + "P$qm" + esc + "\\", // XTGETTCAP, DECRQSS
	}
	for _, q := range asks {
		in := []byte("a" + q + "b")
		got := quiet(bytes.Clone(in))
		want := "a" + strings.Repeat("\x00", len(q)) + "b"
		if string(got) != want {
			t.Errorf("%q: replayed as %q, want it blanked", q, got)
		}
	}
	keeps := []string{
		esc + "[1;31m", esc + "[2J", esc + "[H", esc + "[?25l", esc + "[?2004h", esc + "[?1049h", // drawing, modes
		esc + "[>1u", esc + "[8;30;100t", esc + "[22;0t", // kitty flags pushed, a resize, a title pushed
		esc + "]0;title\a", esc + "]8;;https://example.test/?\a" + "link" + esc + "]8;;\a", // a title, a link
		esc + "Pq#0;2;0;0;0" + esc + "\\",        // sixel
		esc + "[6", esc + "]11;?", esc + "P+q54", // cut by the ring's end
		"plain text\r\n", "\x1b", esc + "(B", // ESC alone, a charset
	}
	for _, k := range keeps {
		in := []byte(k)
		if got := quiet(bytes.Clone(in)); !bytes.Equal(got, in) {
			t.Errorf("%q: replayed as %q, want it kept", k, got)
		}
	}
}

// A terminal whose program asked its terminal questions (as an agent's
// UI does at its start) replays, on attach, what it drew but not the
// questions: the new terminal would answer them as her typing.
// Shown failing before quiet: the scrollback held "\x1b[c".
func TestReattachDropsQuestions(t *testing.T) {
	f := newFixture(t, Config{})
	a := f.connect(t)
	id := a.spawn(t, protocol.SpawnTerminalParams{Cols: 100, Rows: 30}).TerminalID
	a.send(t, id, `printf 'DRAWN\033[c\033]11;?\007\033[6nREADY%s\n' $((40+2))`+"\n")
	a.waitOutput(t, id, "READY42")
	a.stop()

	b := f.connect(t)
	waitDetached(t, b, id)
	var at protocol.AttachTerminalResult
	if err := b.c.Call(context.Background(), "attach_terminal", protocol.TerminalIDParams{TerminalID: id}, &at); err != nil {
		t.Fatal(err)
	}
	sb := string(at.Scrollback)
	if !strings.Contains(sb, "DRAWN") || !strings.Contains(sb, "READY42") {
		t.Fatalf("scrollback %q lacks what was drawn", sb)
	}
	for _, q := range []string{esc + "[c", esc + "]11;?", esc + "[6n"} {
		if strings.Contains(sb, q) {
			t.Errorf("the scrollback replays the question %q: %q", q, sb)
		}
	}
}

// Whatever a program wrote, quiet keeps its length and every byte but
// the questions' (which become NUL), and is done in one pass.
func FuzzQuiet(f *testing.F) {
	for _, s := range []string{"", esc, esc + "[", esc + "[c", esc + "]11;?" + esc, esc + "P+q" + esc + "\\x", "a" + esc + "[?1;2" + esc + "[6n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got := quiet(bytes.Clone(in))
		if len(got) != len(in) {
			t.Fatalf("length %d, want %d", len(got), len(in))
		}
		for i := range in {
			if got[i] != in[i] && got[i] != 0 {
				t.Fatalf("byte %d changed to %q", i, got[i])
			}
		}
		if again := quiet(bytes.Clone(got)); !bytes.Equal(again, got) {
			t.Fatalf("not settled: %q then %q", got, again)
		}
	})
}
