// ToPascalCase of github.com/huandu/xstrings v1.5.0, which Sprig v3.3.0's camelcase calls and
// which Debian's xstrings (1.3.3) lacks. build.sh lays it over a copy of Debian's package in
// the oracle's own GOPATH root; it is not part of the oracle's main package.
//
// The rule, as v1.5.0 states it: connectors (space, '_', '-') are dropped except a run of them
// (all but the last kept) and leading or trailing ones; the first letter of the text and of
// each word after a connector is upper-cased; within a word that began with an upper-case
// letter, the upper-case letters that follow it are lower-cased up to its first non-upper-case
// one ("GOLANG_IS_GREAT" -> "GolangIsGreat", "some_words" -> "SomeWords").
package xstrings

import (
	"unicode"
	"unicode/utf8"
)

// ToPascalCase converts words separated by space, underscore and hyphen to pascal case.
func ToPascalCase(str string) string {
	if str == "" {
		return ""
	}
	var out []rune
	var cur, prev rune
	var n int
	upperRun := false
	// Leading connectors are kept; the first other rune is upper-cased.
	for str != "" {
		cur, n = utf8.DecodeRuneInString(str)
		str = str[n:]
		if !isConnector(cur) {
			upperRun = unicode.IsUpper(cur)
			cur = unicode.ToUpper(cur)
			break
		}
		out = append(out, cur)
	}
	if str == "" {
		if n != 0 {
			out = append(out, cur)
		}
		return string(out)
	}
	for str != "" {
		prev = cur
		cur, n = utf8.DecodeRuneInString(str)
		str = str[n:]
		switch {
		case isConnector(cur) && isConnector(prev):
			out = append(out, prev)
		case isConnector(prev):
			upperRun = unicode.IsUpper(cur)
			cur = unicode.ToUpper(cur)
		default:
			if upperRun {
				if unicode.IsUpper(cur) {
					cur = unicode.ToLower(cur)
				} else {
					upperRun = false
				}
			}
			out = append(out, prev)
		}
	}
	return string(append(out, cur))
}
