// Package gateway implements the model gateway: an HTTP handler that
// stands between an agent CLI and its model provider. The agent holds a
// placeholder in place of the provider's API key; the executor's relay
// opens each connection with the credential of the task whose process
// holds it (DoorListener, Options.Door); the gateway checks that
// credential with an Authorizer, takes the placeholder off the request
// (every header and query parameter a client may put a key in), puts the
// real key where that provider expects it, forwards the request to the
// grant's upstream, streams the answer back as it arrives, and records
// one Entry per request with a Recorder.
//
// It guarantees:
//
//   - The real key goes only on the upstream request. Nothing the gateway
//     writes itself names a key or echoes the presented token; upstream
//     answers are passed through as the provider wrote them.
//   - The token never reaches the provider. Behind the door, nothing a
//     request says chooses its task: only its connection's credential.
//   - Usage is read from the provider's own response (its usage fields,
//     streamed or not), never from anything the client says.
//   - Memory per request is bounded: the request body by Options.MaxBody
//     (read whole before forwarding, so the transport never races the
//     server for it), the response by a streaming scanner that keeps only
//     the usage object it is reading (at most 64 KiB) and a few bytes of
//     state, however long the answer or its lines.
//   - A request is sent only once its worst case is held against its
//     person's budget, when the Authorizer is a Reserver (askOf reads the
//     output bound from each API's own field); the hold is released once
//     its Entry is recorded, or on whatever path ends the request.
//   - Server-sent events reach the client event by event: each read from
//     the provider is written and flushed before the next.
//
// Four API shapes are understood (see API): Anthropic Messages, OpenAI
// Responses, OpenAI Chat Completions and Gemini generateContent /
// streamGenerateContent.
package gateway
