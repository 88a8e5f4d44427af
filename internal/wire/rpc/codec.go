package rpc

import jsonv1 "github.com/go-json-experiment/json/v1"

// Params and results are decoded and encoded with encoding/json's (v1)
// semantics as implemented on the engine of encoding/json/v2
// (github.com/go-json-experiment/json/v1, the code encoding/json itself
// runs on under GOEXPERIMENT=jsonv2): the same field matching, types and
// errors, in about half the time. Decoding the params of a report_message
// dominates what the daemon spends per event.
var (
	unmarshal = jsonv1.Unmarshal
	marshal   = jsonv1.Marshal
)

// unmarshalTypeError is what unmarshal reports for a value of the wrong type.
type unmarshalTypeError = jsonv1.UnmarshalTypeError
