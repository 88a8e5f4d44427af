package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fuzzSeeds are bodies the providers send, and a few broken ones.
func fuzzSeeds() []string {
	return []string{
		anthJSON, responsesJSON, chatJSON, strings.Join(geminiArray, ""), heldStart + heldEnd,
		"data: {\"usageMetadata\":{\"promptTokenCount\":3,\"thoughtsTokenCount\":2}}\r\n\r\n",
		"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":5,\"input_tokens_details\":{\"cached_tokens\":1}}}}\n\n",
		"data: {\"usage\":\ndata: {\"prompt_tokens\":3}}\n\ndata: [DONE]\n\n",
		`{"\u0075sage":{"input_tokens":-4,"output_tokens":1e3}}`,
		`[{"usageMetadata":{"promptTokenCount":9223372036854775807,"toolUsePromptTokenCount":9}}`,
		`{"usage":{"a":"}\"{","b":[{"usage":{}}]}}]]]}}}`, "\r\r\n\n:data\ndata:data:{{{{", "",
	}
}

// FuzzUsage: whatever bytes a provider (or anything posing as one)
// answers, each extractor neither panics nor holds more than its bounds,
// and finds the same usage however the bytes are split into reads.
func FuzzUsage(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, body []byte, split uint16) {
		for _, api := range allAPIs {
			for _, sse := range []bool{true, false} {
				whole, u1, err1 := extract(api, sse, body, 0)
				checkBounds(t, whole)
				k := 1 + int(split)%max(len(body), 1)
				halves, u2, err2 := extract(api, sse, body, k)
				checkBounds(t, halves)
				if u1 != u2 || (err1 == nil) != (err2 == nil) {
					t.Fatalf("%s sse=%v: whole %+v %v, in pieces of %d %+v %v", api, sse, u1, err1, k, u2, err2)
				}
				if u1.Input < 0 || u1.Output < 0 || u1.CacheRead < 0 || u1.CacheWrite < 0 {
					t.Fatalf("%s sse=%v: negative usage %+v", api, sse, u1)
				}
			}
		}
	})
}

func checkBounds(t *testing.T, x *extractor) {
	t.Helper()
	f := x.find
	if len(f.capture) > maxCapture || len(f.key) > maxKey+1 || len(f.frames) > f.limit || f.depth < 0 {
		t.Fatalf("over bounds: capture %d, key %d, frames %d, depth %d", len(f.capture), len(f.key), len(f.frames), f.depth)
	}
}

// FuzzFinder: on any valid JSON document the finder hands over exactly
// the objects encoding/json finds at the same paths, byte for byte.
func FuzzFinder(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"message":{"usage":{"x":1}},"usage":{"y":[{}]},"usage":{"z":"\"}"}}`))
	f.Add([]byte(`[{"usageMetadata":{}} , {"a":{"usageMetadata":{}}},[{"usageMetadata":{}}]]`))
	paths := [][]string{{"usage"}, {"message", "usage"}, {"[]", "usageMetadata"}}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		var got []string
		fd := newFinder(paths, func(_ int, raw []byte) { got = append(got, string(raw)) })
		_, _ = fd.Write(doc)
		want, err := reference(doc, paths)
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || fd.depth != 0 || fd.inStr {
			t.Fatalf("finder %q (depth %d), encoding/json %q", got, fd.depth, want)
		}
	})
}

// reference finds, with encoding/json's decoder, the objects of at most
// maxCapture bytes at paths in doc, in order.
func reference(doc []byte, paths [][]string) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // a valid number out of float64's range (1e700) is still JSON
	var out []string
	var walk func(path []string) error
	walk = func(path []string) error {
		if pathIn(paths, path) {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			if raw[0] == '{' && len(raw) <= maxCapture {
				out = append(out, string(raw))
			}
			return nil
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				if err := walk(append(path[:len(path):len(path)], key.(string))); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		case json.Delim('['):
			for dec.More() {
				if err := walk(append(path[:len(path):len(path)], "[]")); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		return err
	}
	return out, walk(nil)
}

func pathIn(paths [][]string, path []string) bool {
	for _, p := range paths {
		if len(p) > 0 && slices.Equal(p, path) {
			return true
		}
	}
	return false
}
