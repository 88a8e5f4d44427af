package rawframe

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestRawFrames(t *testing.T) {
	var b bytes.Buffer
	big := bytes.Repeat([]byte{0, 0xff}, 40000)
	frames := []struct {
		typ byte
		p   []byte
	}{{Output, []byte("hello\r\n")}, {Detach, nil}, {Output, big}, {Resize, Size(132, 50)}}
	for _, f := range frames {
		if err := Write(&b, f.typ, f.p); err != nil {
			t.Fatal(err)
		}
	}
	var buf []byte
	for _, f := range frames {
		typ, p, err := Read(&b, &buf)
		if err != nil || typ != f.typ || !bytes.Equal(p, f.p) && len(f.p) > 0 {
			t.Fatalf("read %q %d bytes %v, want %q %d bytes", typ, len(p), err, f.typ, len(f.p))
		}
	}
	if c, r, ok := ParseSize(Size(132, 50)); !ok || c != 132 || r != 50 {
		t.Fatalf("size %d %d %v", c, r, ok)
	}
	if _, _, err := Read(&b, &buf); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
	if _, _, err := Read(bytes.NewReader([]byte{'o', 0, 0, 0, 9, 'a'}), &buf); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short payload: %v", err)
	}
	if _, _, err := Read(bytes.NewReader([]byte{'o', 0xff, 0, 0, 0}), &buf); err == nil {
		t.Fatal("a frame past MaxFrame was read")
	}
}

// FuzzReadRawFrame: any bytes give frames or an error, never a panic or
// a payload past the bound.
func FuzzReadRawFrame(f *testing.F) {
	f.Add([]byte("o\x00\x00\x00\x02hi"))
	f.Add([]byte("r\x00\x00\x00\x04\x00\x50\x00\x18d\x00\x00\x00\x00"))
	f.Add([]byte("x\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var buf []byte
		for {
			typ, p, err := Read(r, &buf)
			if err != nil {
				return
			}
			if len(p) > MaxFrame {
				t.Fatalf("payload of %d bytes", len(p))
			}
			if typ == Resize {
				_, _, _ = ParseSize(p)
			}
		}
	})
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		typ  byte
		p    []byte
		want Control
		ok   bool
	}{
		{Input, []byte("ls\r"), Control{Input: []byte("ls\r")}, true},
		{Resize, Size(120, 40), Control{Cols: 120, Rows: 40}, true},
		{Resize, []byte{1}, Control{}, false},
		{Resize, Size(0, 40), Control{Rows: 40}, false},
		{Terminate, nil, Control{Terminate: true}, true},
		{Detach, nil, Control{Detach: true}, true},
		{Output, []byte("x"), Control{}, false},
		{'?', nil, Control{}, false},
	} {
		got, ok := Decode(tc.typ, tc.p)
		if ok != tc.ok || string(got.Input) != string(tc.want.Input) || got.Cols != tc.want.Cols || got.Rows != tc.want.Rows || got.Terminate != tc.want.Terminate || got.Detach != tc.want.Detach {
			t.Errorf("Decode(%q, %v) = %+v %v, want %+v %v", tc.typ, tc.p, got, ok, tc.want, tc.ok)
		}
	}
}
