package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tree-ring/tree-ring/cmd/internal/cli"
)

// A CLI that guides: command groups list their subcommands, and a mistyped
// command or subcommand gets the nearest one suggested.

// subcommands returns the commands of group (the commands whose name is
// group plus one more word), sorted by name.
func subcommands(group string) []*command {
	var out []*command
	for name, c := range commands {
		if rest, ok := strings.CutPrefix(name, group+" "); ok && !strings.Contains(rest, " ") {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// isGroup reports whether word names a group of commands.
func isGroup(word string) bool { return len(subcommands(word)) > 0 }

// printGroupHelp lists a group's subcommands.
func printGroupHelp(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage: tree-ring %s SUBCOMMAND [flags] [args]\n\nSubcommands:\n", group)
	printCommandList(w, subcommands(group))
	fmt.Fprintf(w, "\nRun `tree-ring %s SUBCOMMAND --help` for a subcommand's flags.\n", group)
}

func printCommandList(w io.Writer, cs []*command) {
	width := 0
	for _, c := range cs {
		width = max(width, len(c.name)+len(c.args)+1)
	}
	for _, c := range cs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
}

// unknownCommand is the usage error for words that name no command: the
// group's subcommands when the first word is a group, and the nearest
// command when one is close. A word is quoted only when it has the form of
// a command word (a mistyped SUMMARY may be private).
func unknownCommand(words []string) error {
	if len(words) > 1 && isGroup(words[0]) {
		return unknownInGroup(words[0], words[1])
	}
	msg := fmt.Sprintf("unknown command %s", shown(words[0]))
	if best := nearestCommand(words); best != "" {
		return usagef("%s; did you mean `tree-ring %s`? (see `tree-ring --help`)", msg, best)
	}
	return usagef("%s (see `tree-ring --help`)", msg)
}

// unknownInGroup is the usage error for word after group: flags before a
// subcommand, or a subcommand the group does not have.
func unknownInGroup(group, word string) error {
	var names []string
	for _, c := range subcommands(group) {
		names = append(names, c.name)
	}
	if strings.HasPrefix(word, "-") {
		return usagef("%s needs a subcommand before its flags: %s (see `tree-ring %s --help`)", group, strings.Join(lastWords(names), ", "), group)
	}
	msg := fmt.Sprintf("unknown %s subcommand %s", group, shown(word))
	if near := nearest(group+" "+word, names); near != "" {
		return usagef("%s; did you mean `tree-ring %s`?", msg, near)
	}
	return usagef("%s; %s has: %s (see `tree-ring %s --help`)", msg, group, strings.Join(lastWords(names), ", "), group)
}

// nearestCommand is the command name or group closest to words ("" if
// none is close). A first word is compared with command words, and two
// words with two-word names, so that `integration status` finds its group.
func nearestCommand(words []string) string {
	candidates := map[string]bool{}
	for n := range commands {
		if k := strings.Count(n, " ") + 1; k <= len(words) {
			candidates[n] = true
		}
		candidates[strings.SplitN(n, " ", 2)[0]] = true
	}
	var cs []string
	for c := range candidates {
		cs = append(cs, c)
	}
	sort.Strings(cs)
	best, bestD := "", -1
	for _, c := range cs {
		k := strings.Count(c, " ") + 1
		in := strings.Join(words[:k], " ")
		// On a tie the longer name wins: it names the subcommand too.
		if d := editDistance(in, c); d <= closeEnough(c) && (bestD < 0 || d < bestD || d == bestD && len(c) > len(best)) {
			best, bestD = c, d
		}
	}
	return best
}

// unknownSubcommand reports an argument of a command that takes none, when
// the command is also a group (`events imprt`).
func unknownSubcommand(c *command, word string) error {
	var names []string
	for _, s := range subcommands(c.name) {
		names = append(names, s.name)
	}
	msg := fmt.Sprintf("%s takes no arguments and has no subcommand %s", c.name, shown(word))
	if near := nearest(c.name+" "+word, names); near != "" {
		return usagef("%s; did you mean `tree-ring %s`?", msg, near)
	}
	return usagef("%s; its subcommands: %s", msg, strings.Join(lastWords(names), ", "))
}

func lastWords(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n[strings.LastIndexByte(n, ' ')+1:]
	}
	return out
}

// nearest returns the name closest to typed within closeEnough, "" if none.
func nearest(typed string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		if d := editDistance(typed, n); d <= closeEnough(n) && (bestD < 0 || d < bestD) {
			best, bestD = n, d
		}
	}
	return best
}

// closeEnough is the largest distance at which name is suggested: a third
// of its last word, at least 1, at most 3.
func closeEnough(name string) int {
	last := name[strings.LastIndexByte(name, ' ')+1:]
	return min(3, max(1, len(last)/3))
}

// shown quotes a typed word if it looks like a command word, else says it
// is not shown.
func shown(word string) string {
	if cli.PrintableFlagName(word) {
		return fmt.Sprintf("%q", word)
	}
	return "(not shown)"
}

// editDistance is the optimal string alignment distance (insertions,
// deletions, substitutions and adjacent transpositions cost 1) of two
// strings, over bytes; inputs longer than 64 bytes are far from every
// command name and return 64 without the quadratic table.
func editDistance(a, b string) int {
	const limit = 64
	if len(a) > limit || len(b) > limit {
		return limit
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
