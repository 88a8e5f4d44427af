package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// BenchmarkFiles prints the throughput of writing and reading a 64 MiB
// file through the daemon's API (HTTP on its socket, the daemon relaying
// write_file/read_file chunks) beside the same chunks sent to the
// executor's socket directly, and the ratio.
func BenchmarkFiles(b *testing.B) {
	h := start(b)
	name, _ := target(b)
	data := make([]byte, 64<<20)
	_, _ = rand.Read(data)
	url := "/v1/executors/" + name + "/files/content?path=bench.bin"
	if resp := h.raw(b, "PUT", url, bytes.NewReader(data), nil); resp.StatusCode != 200 { // starts the executor
		b.Fatalf("first write: %d", resp.StatusCode)
	}
	sock := filepath.Join(filepath.Dir(h.sock), "x", name+".sock")
	direct, err := rpc.Dial(context.Background(), sock, nil, rpc.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	mbps := func(d time.Duration) float64 { return float64(len(data)) / d.Seconds() / (1 << 20) }
	var apiW, apiR, dirW, dirR []float64
	for b.Loop() {
		t := time.Now()
		resp := h.raw(b, "PUT", url, bytes.NewReader(data), nil)
		resp.Body.Close()
		apiW = append(apiW, mbps(time.Since(t)))
		t = time.Now()
		resp = h.raw(b, "GET", url, nil, nil)
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != int64(len(data)) {
			b.Fatalf("read %d bytes", n)
		}
		apiR = append(apiR, mbps(time.Since(t)))
		t = time.Now()
		directWrite(b, direct, data)
		dirW = append(dirW, mbps(time.Since(t)))
		t = time.Now()
		directRead(b, direct, int64(len(data)))
		dirR = append(dirR, mbps(time.Since(t)))
	}
	w, r, dw, dr := median(apiW), median(apiR), median(dirW), median(dirR)
	b.Logf("64 MiB through the API: write %.0f MB/s, read %.0f MB/s; to the executor directly: write %.0f MB/s, read %.0f MB/s; API/direct: write %.2fx, read %.2fx",
		w, r, dw, dr, w/dw, r/dr)
	b.ReportMetric(w, "api-write-MB/s")
	b.ReportMetric(r, "api-read-MB/s")
	b.ReportMetric(w/dw, "write-ratio")
	b.ReportMetric(r/dr, "read-ratio")
}

func directWrite(b *testing.B, c *rpc.Client, data []byte) {
	const chunk = 512 << 10
	for off := 0; off < len(data); off += chunk {
		end := min(off+chunk, len(data))
		final := end == len(data)
		p := protocol.WriteFileParams{Path: "bench-direct.bin", Content: data[off:end], Offset: int64(off), Final: &final}
		if err := c.Call(context.Background(), protocol.MethodWriteFile, p, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func directRead(b *testing.B, c *rpc.Client, size int64) {
	for off := int64(0); off < size; {
		var res protocol.ReadFileResult
		if err := c.Call(context.Background(), protocol.MethodReadFile, protocol.ReadFileParams{Path: "bench.bin", Offset: off}, &res); err != nil {
			b.Fatal(err)
		}
		off += int64(len(res.Content))
		if res.EOF || len(res.Content) == 0 {
			return
		}
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
