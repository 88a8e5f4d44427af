package terminal

import "bytes"

// Replayed output is output the program wrote long ago, to another
// terminal (or to none). Among it are its questions to the terminal: the
// device attributes, the cursor's position, the colours, a capability
// (Claude Code's, codex's and gemini's UIs ask them as they start). A
// terminal answers each as typed input, so an attach that replays them
// types the answers into the program now, where it no longer waits for
// them: "[?1;2c" and "rgb:..." land in the agent's prompt box. quiet
// overwrites each question in replayed output with as many NUL bytes,
// which terminals ignore: the length stays, and with it every offset of
// the raw stream (a resumed attach counts bytes from AttachTerminalRawResult's
// Offset). What is no question is left alone, a sequence cut by the
// ring's start or end too.
func quiet(b []byte) []byte {
	for i := 0; i < len(b); i++ {
		if b[i] != 0x1b || i+1 >= len(b) {
			continue
		}
		var n int
		var ask bool
		switch b[i+1] {
		case '[':
			n, ask = csiQuery(b[i:])
		case ']':
			n, ask = stringQuery(b[i:], oscQuery)
		case 'P':
			n, ask = stringQuery(b[i:], dcsQuery)
		default:
			continue
		}
		if ask {
			clear(b[i : i+n])
		}
		if n > 0 {
			i += n - 1
		}
	}
	return b
}

// csiQuery reads the control sequence at the start of b (ESC [ ...): its
// length (0 if b ends first) and whether the terminal answers it.
func csiQuery(b []byte) (int, bool) {
	j := 2
	for j < len(b) && b[j] >= 0x20 && b[j] <= 0x3f { // parameters, intermediates
		j++
	}
	if j >= len(b) || b[j] < 0x40 || b[j] > 0x7e {
		return 0, false // cut short, or not a control sequence
	}
	body, final := string(b[2:j]), b[j]
	return j + 1, csiAsks(body, final)
}

// csiAsks: the control sequences a terminal answers.
func csiAsks(body string, final byte) bool {
	switch final {
	case 'c': // device attributes: primary, secondary (>), tertiary (=)
		return body == "" || body == "0" || body == ">" || body == ">0" || body == "=" || body == "=0"
	case 'n': // status and cursor position reports (5n, 6n, ?6n, ?996n, ...)
		return body != "" && body != "0"
	case 'p': // DECRQM: a mode's state (CSI Ps $ p, CSI ? Ps $ p)
		return len(body) > 0 && body[len(body)-1] == '$'
	case 'q': // XTVERSION (CSI > q, CSI > 0 q)
		return body == ">" || body == ">0"
	case 'u': // the kitty keyboard protocol's flags (CSI ? u)
		return body == "?"
	case 't': // window reports: state, position, sizes, titles
		switch body {
		case "11", "13", "14", "15", "16", "18", "19", "20", "21":
			return true
		}
		return len(body) > 3 && (body[:3] == "13;" || body[:3] == "14;")
	}
	return false
}

// stringQuery reads the OSC or DCS string at the start of b, ended by
// BEL or ST (ESC \): its length (0 if b ends first) and whether asks
// says the terminal answers it.
func stringQuery(b []byte, asks func([]byte) bool) (int, bool) {
	for j := 2; j < len(b); j++ {
		switch {
		case b[j] == 0x07:
			return j + 1, asks(b[2:j])
		case b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\':
			return j + 2, asks(b[2:j])
		case b[j] == 0x1b:
			return j, false // another sequence begins: this one was cut
		}
	}
	return 0, false
}

// oscQuery: an OSC whose last field is "?" asks for a value (colours
// 4, 10-19, 104...; the clipboard, 52; the cursor's colour), as does
// OSC 52 with "?" as its data.
func oscQuery(s []byte) bool {
	return bytes.HasSuffix(s, []byte(";?"))
}

// dcsQuery: XTGETTCAP (DCS + q) and DECRQSS (DCS $ q) ask for a
// capability and a setting.
func dcsQuery(s []byte) bool {
	return bytes.HasPrefix(s, []byte("+q")) || bytes.HasPrefix(s, []byte("$q"))
}
