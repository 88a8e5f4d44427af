package gateway

import (
	"bytes"
	"strings"
	"testing"
)

// extract feeds body to a fresh extractor in pieces of n bytes (0: whole).
func extract(api API, sse bool, body []byte, n int) (*extractor, Usage, error) {
	x := newExtractor(api, sse)
	if n <= 0 {
		n = len(body) + 1
	}
	for p := body; len(p) > 0; {
		k := min(n, len(p))
		_, _ = x.Write(p[:k])
		p = p[k:]
	}
	u, err := x.result()
	return x, u, err
}

// TestExtract: usage as each provider reports it, streamed and not, in
// the forms their APIs document; the same whether the body comes whole
// or a byte at a time.
func TestExtract(t *testing.T) {
	cases := []struct {
		name string
		api  API
		sse  bool
		body string
		want Usage
	}{
		{"anthropic/delta-output-only", Anthropic, true,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":3,\"cache_read_input_tokens\":9,\"output_tokens\":1}}}\n\n" +
				"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n",
			Usage{Input: 25, Output: 15, CacheRead: 9, CacheWrite: 3}},
		{"anthropic/delta-repeats", Anthropic, true,
			"data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\r\n\r\n" +
				"data: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":4,\"cache_read_input_tokens\":0,\"output_tokens\":80}}\r\n\r\n",
			Usage{Input: 4, Output: 80}},
		{"anthropic/text-looks-like-usage", Anthropic, true,
			"data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"\\\"usage\\\":{\\\"input_tokens\\\":1}\"}}\n\n" +
				"data: {\"type\":\"content_block_delta\",\"delta\":{\"usage\":{\"input_tokens\":99}}}\n\n",
			Usage{}},
		{"responses/incomplete", OpenAIResponses, true,
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n" +
				"event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\"," +
				"\"usage\":{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":4},\"output_tokens\":6}}}\n\n",
			Usage{Input: 6, Output: 6, CacheRead: 4}},
		{"chat/usage-chunk", OpenAIChat, true,
			"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":null}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\ndata: [DONE]\n\n",
			Usage{Input: 30, Output: 2}},
		{"chat/multiline-data", OpenAIChat, true,
			"data: {\"usage\":\ndata: {\"prompt_tokens\":3,\ndata:\"completion_tokens\":1}}\n\n",
			Usage{Input: 3, Output: 1}},
		{"gemini/sse-last-wins", Gemini, true,
			"data: {\"usageMetadata\":{\"promptTokenCount\":100,\"candidatesTokenCount\":1}}\r\n\r\n" +
				"data: {\"usageMetadata\":{\"promptTokenCount\":100,\"candidatesTokenCount\":20,\"thoughtsTokenCount\":5,\"cachedContentTokenCount\":60,\"toolUsePromptTokenCount\":2}}\r\n\r\n",
			Usage{Input: 42, Output: 25, CacheRead: 60}},
		{"gemini/json", Gemini, false,
			`{"candidates":[{"content":{"parts":[{"text":"{\"usageMetadata\":{\"promptTokenCount\":5}}"}]}}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":2}}`,
			Usage{Input: 8, Output: 2}},
		{"gemini/array", Gemini, false, strings.Join(geminiArray, ""), Usage{Input: 388, Output: 100, CacheRead: 512}},
		{"responses/json", OpenAIResponses, false, responsesJSON, Usage{Input: 952, Output: 120, CacheRead: 2048}},
		{"anthropic/json", Anthropic, false, anthJSON, Usage{Input: 2095, Output: 503, CacheRead: 1800, CacheWrite: 200}},
		{"chat/json-escaped-key", OpenAIChat, false, `{"\u0075sage":{"prompt_tokens":7,"completion_tokens":1}}`, Usage{Input: 7, Output: 1}},
		{"chat/cached-over-prompt", OpenAIChat, false, `{"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":5}}}`, Usage{CacheRead: 5}},
		{"not-json", OpenAIChat, false, "<html>502 Bad Gateway</html>", Usage{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range []int{0, 1, 7} {
				_, got, err := extract(c.api, c.sse, []byte(c.body), n)
				if got != c.want || err != nil {
					t.Errorf("in pieces of %d: usage %+v, %v; want %+v", n, got, err, c.want)
				}
			}
		})
	}
}

// TestExtractBounded: a line or a body of many megabytes, the usage at
// its end, is read without holding it; a usage object over the capture
// bound is reported, not read.
func TestExtractBounded(t *testing.T) {
	huge := strings.Repeat(`{"type":"output_text","text":"`+strings.Repeat("x", 1<<20)+`"},`, 12)
	line := "data: {\"type\":\"response.completed\",\"response\":{\"output\":[" + huge + "{}]," +
		"\"usage\":{\"input_tokens\":7,\"output_tokens\":3}}}\n\n"
	x, u, err := extract(OpenAIResponses, true, []byte(line), 32<<10)
	if u != (Usage{Input: 7, Output: 3}) || err != nil {
		t.Errorf("a 12 MiB line: usage %+v, %v", u, err)
	}
	if c := cap(x.find.capture); c > 2*maxCapture {
		t.Errorf("held %d bytes", c)
	}
	body := `{"usage":{"prompt_tokens":1,"pad":"` + strings.Repeat("y", maxCapture) + `"}}`
	_, u, err = extract(OpenAIChat, false, []byte(body), 4096)
	if err == nil || u != (Usage{}) {
		t.Errorf("an oversized usage object: usage %+v, err %v", u, err)
	}
}

// TestEventsFields: only data lines feed the document; other fields,
// comments and a line without a colon are skipped, a CR-only line is a
// blank line.
func TestEventsFields(t *testing.T) {
	var got bytes.Buffer
	f := newFinder([][]string{{"usage"}}, func(_ int, raw []byte) { got.Write(raw); got.WriteByte('|') })
	e := &events{doc: f}
	in := ": comment {\"usage\":{\"a\":1}}\nevent: {\"usage\":{\"b\":1}}\nid: 3\ndata\ndat: x\n" +
		"data:{\"usage\":{\"c\":1}}\n\r\ndata:  {\"usage\":{\"d\":1}}\r\n\r\n"
	_, _ = e.Write([]byte(in))
	if want := `{"c":1}|{"d":1}|`; got.String() != want {
		t.Errorf("found %q, want %q", got.String(), want)
	}
}
