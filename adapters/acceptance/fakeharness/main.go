// Command fakeharness plays a harness's hook runner for the deterministic
// acceptance suite: it reads the hook definitions a project installed
// (.claude/settings.json for claude-code, .codex/hooks.json for codex),
// selects those of the stdin payload's hook_event_name whose matcher
// accepts it, runs each command line exactly as the client does (Claude
// Code: /bin/sh -c in the project directory with CLAUDE_PROJECT_DIR;
// Codex: /bin/bash -lc in the payload's cwd), with the payload on stdin and
// the definition's timeout, and validates each output as strictly as Codex
// does (one JSON object with only the keys of the event's output; anything
// else is dropped). It prints one JSON report on stdout.
//
//	fakeharness -harness claude-code|codex -project DIR < payload.json
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// Run is the report of one hook command.
type Run struct {
	Command  string `json:"command"`
	Exit     int    `json:"exit"` // -1: killed at the timeout
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Dropped  string `json:"dropped,omitempty"` // why the client would discard the output
	Context  string `json:"context,omitempty"`
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

type hookDef struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

type group struct {
	Matcher *string   `json:"matcher"`
	Hooks   []hookDef `json:"hooks"`
}

func main() {
	harness := flag.String("harness", "", "claude-code or codex")
	project := flag.String("project", "", "the project directory")
	flag.Parse()
	runs, err := run(*harness, *project)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeharness:", err)
		os.Exit(2)
	}
	if err := json.NewEncoder(os.Stdout).Encode(map[string]any{"runs": runs}); err != nil {
		os.Exit(1)
	}
}

func run(harness, project string) ([]Run, error) {
	file := map[string]string{"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json"}[harness]
	if file == "" || project == "" {
		return nil, errors.New("usage: fakeharness -harness claude-code|codex -project DIR < payload.json")
	}
	payload, err := readAll()
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	name, _ := ev["hook_event_name"].(string)
	b, err := os.ReadFile(filepath.Join(project, file))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Hooks map[string][]group `json:"hooks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var runs []Run
	for _, g := range doc.Hooks[name] {
		if !matches(g.Matcher, name, ev) {
			continue
		}
		for _, h := range g.Hooks {
			if h.Type != "command" {
				continue
			}
			runs = append(runs, runOne(harness, project, h, payload, name, ev))
		}
	}
	return runs, nil
}

func readAll() ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(os.Stdin)
	return buf.Bytes(), err
}

// matches applies a group's matcher the way both clients do: absent, empty
// or "*" matches everything; otherwise a regular expression that must match
// the whole of the event's matcher field (source for SessionStart,
// agent_type for the subagent events; Stop has none and always runs).
func matches(m *string, event string, ev map[string]any) bool {
	if m == nil || *m == "" || *m == "*" {
		return true
	}
	field := map[string]string{"SessionStart": "source", "SubagentStart": "agent_type", "SubagentStop": "agent_type"}[event]
	if field == "" {
		return true
	}
	v, _ := ev[field].(string)
	re, err := regexp.Compile("^(?:" + *m + ")$")
	return err == nil && re.MatchString(v)
}

func runOne(harness, project string, h hookDef, payload []byte, event string, ev map[string]any) Run {
	timeout := time.Duration(h.Timeout) * time.Second
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var cmd *exec.Cmd
	env := os.Environ()
	if harness == "claude-code" {
		cmd = exec.CommandContext(ctx, "/bin/sh", "-c", h.Command)
		cmd.Dir = project
		env = append(env, "CLAUDE_PROJECT_DIR="+project, "CLAUDECODE=1")
	} else {
		cmd = exec.CommandContext(ctx, "/bin/bash", "-lc", h.Command)
		cmd.Dir, _ = ev["cwd"].(string)
	}
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(payload)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Run{Command: h.Command, Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Exit = -1
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	case err != nil:
		r.Exit, r.Stderr = 127, err.Error()
	}
	if r.Exit == 0 && r.Stdout != "" {
		validate(&r, event)
	}
	return r
}

// validate decodes the output strictly: exactly one JSON object holding
// only the keys the event's output allows.
func validate(r *Run, event string) {
	dec := json.NewDecoder(bytes.NewReader([]byte(r.Stdout)))
	dec.DisallowUnknownFields()
	switch event {
	case "SessionStart", "SubagentStart":
		var o struct {
			HookSpecificOutput *struct {
				HookEventName     string `json:"hookEventName"`
				AdditionalContext string `json:"additionalContext"`
			} `json:"hookSpecificOutput"`
		}
		if err := decodeOne(dec, &o); err != nil {
			r.Dropped = err.Error()
		} else if o.HookSpecificOutput == nil || o.HookSpecificOutput.HookEventName != event {
			r.Dropped = "no hookSpecificOutput for " + event
		} else {
			r.Context = o.HookSpecificOutput.AdditionalContext
		}
	default:
		var o struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}
		if err := decodeOne(dec, &o); err != nil {
			r.Dropped = err.Error()
		} else if o.Decision != "" && o.Decision != "block" {
			r.Dropped = "decision " + o.Decision
		} else {
			r.Decision, r.Reason = o.Decision, o.Reason
		}
	}
}

func decodeOne(dec *json.Decoder, v any) error {
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}
