package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// reportProject is a project that went through init, sessions of two
// harnesses (a Claude Code session and subagent, a Codex session), an
// edit of Codex's bridge that a reviewed activate records as drift, and a
// deactivation of Claude Code.
func reportProject(t *testing.T) *hp {
	t.Helper()
	p := newHP(t, ".claude", ".codex")
	p.init()
	for _, c := range [][2]string{{"claude-code", "session-start.json"}, {"claude-code", "subagent-start.json"}, {"codex", "session-start.json"}} {
		if r := p.hook(c[0], p.payload(c[0], c[1], nil)); r.code != 0 {
			t.Fatalf("%v: exit %d: %s", c, r.code, r.stderr)
		}
	}
	editCodexBridge(t, p)
	if r := p.run("", "integrations", "activate", "--harness", "codex"); r.code != exitReview {
		t.Fatalf("activate after the edit: exit %d, want %d: %s", r.code, exitReview, r.stderr)
	}
	p.ok("", "integrations", "deactivate", "--harness", "claude-code")
	return p
}

func editCodexBridge(t *testing.T, p *hp) {
	t.Helper()
	hooks := filepath.Join(p.dir, ".codex", "hooks.json")
	b, err := os.ReadFile(hooks)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(b, []byte(`"timeout": 10`), []byte(`"timeout": 11`), 1)
	if bytes.Equal(edited, b) {
		t.Fatal("the Codex bridge has no timeout to edit")
	}
	if err := os.WriteFile(hooks, edited, 0o644); err != nil {
		t.Fatal(err)
	}
}

// auditReport runs audit report into a new file of the test's and
// returns the file's path and bytes.
func auditReport(t *testing.T, p *hp, extra ...string) (string, []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "report.html")
	out := p.ok("", append([]string{"audit", "report", "--html", file}, extra...)...)
	if !strings.HasPrefix(out, "wrote "+file+": ") {
		t.Fatalf("stdout %q", out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return file, b
}

// What a store's random identity makes differ from run to run: the store
// id (and the receipt ids, UUIDs too), and every hash over them (the root
// fingerprint, the chain head, bridge fingerprints).
var (
	uuidRE   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)
	hex64RE  = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	bridgeRE = regexp.MustCompile(`bridge [0-9a-f]{12}\b`)
)

func normalizeReport(b []byte) []byte {
	b = uuidRE.ReplaceAll(b, []byte("UUID"))
	b = hex64RE.ReplaceAll(b, []byte("HEX64"))
	return bridgeRE.ReplaceAll(b, []byte("bridge FINGERPRINT"))
}

// The page of the lifecycle project, with the fixed clock, is the golden
// file once its random identity is masked; it states what the ledger
// holds.
func TestAuditReportGolden(t *testing.T) {
	p := reportProject(t)
	_, b := auditReport(t, p)
	golden(t, "audit-report.html", normalizeReport(b))
	var v struct {
		ChainHead string `json:"chain_head"`
		StoreID   string `json:"store_id"`
	}
	if err := json.Unmarshal([]byte(p.ok("", "--json", "audit", "verify")), &v); err != nil {
		t.Fatal(err)
	}
	id := storeIDOf(t, filepath.Join(p.dir, ".tree-ring"))
	for _, want := range []string{"<code>" + v.ChainHead + "</code>", "<code>" + id + "</code>", `<article id="h-claude-code">`, `<article id="h-codex">`,
		"<code>bridge.drift_detected</code>", "<code>harness.deactivation_requested</code>", "3 receipts in the window"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// The file is created only: an existing one is refused (exit 2, left as
// it was) unless --force, which replaces it whole.
func TestAuditReportFileRules(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	file, _ := auditReport(t, p)
	if err := os.WriteFile(file, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := p.run("", "audit", "report", "--html", file)
	if r.code != exitError || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "exists; nothing was written (pass --force to replace it)") {
		t.Fatalf("existing file: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Fatal("a refused report changed the file")
	}
	p.ok("", "audit", "report", "--html", file, "--force")
	if b, _ := os.ReadFile(file); !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) {
		t.Fatal("--force did not replace the file")
	}
	if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 1 {
		t.Fatalf("temporary files left beside the report: %v", ents)
	}
	js := oneObject(t, p.ok("", "--json", "audit", "report", "--html", file+".json"))
	// Two timelines: agent-zero (needs-plugin) and claude-code.
	if js["ok"] != true || js["html"] != file+".json" || js["count"] != float64(2) {
		t.Fatalf("--json: %v", js)
	}
	if err := os.Remove(file + ".json"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "report"}, "--html FILE is required"},
		{[]string{"audit", "report", "--html", file + ".2", "--at", "yesterday"}, "--at \"yesterday\""},
		{[]string{"audit", "report", "--html", file + ".2", "--at", "2026-11-01T12:00:00Z", "--since", "2026-11-02T00:00:00Z"}, "is after --at"},
		{[]string{"audit", "report", "--html", file + ".2", "extra"}, "takes no arguments"},
		{[]string{"fleet", "report", "--html", file + ".2"}, "--from DIR is required"},
	} {
		if r := p.run("", c.args...); r.code != exitError || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(file + ".2"); err == nil {
		t.Fatal("a refused command wrote a report")
	}
}

// A store whose receipt file went missing fails verification: the page
// is written and says so, and the command exits 3.
func TestAuditReportFailedVerification(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	rs := p.receipts()
	if len(rs) != 1 {
		t.Fatalf("receipts %v", rs)
	}
	if err := os.Remove(filepath.Join(p.dir, rs[0])); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	r := p.run("", "audit", "report", "--html", file)
	if r.code != exitVerify || r.stdout != "" || !strings.Contains(r.stderr, "the store failed verification: receipt files: 1 retained receipt(s) without their file") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`<td class="bad">failed: receipt files: 1 retained receipt(s) without their file</td>`)) {
		t.Fatal("the page does not show the failed verification")
	}
}

// Nothing private reaches the page: memory text, a task hint, payload
// fields the hook ignores, the absolute project path, the home directory
// and another environment value.
func TestAuditReportPrivacyCanary(t *testing.T) {
	p := newHP(t, ".claude", ".pi")
	p.init()
	const canary = "CANARY-7d1f3a9e-keep-out-of-reports"
	p.env["TREE_RING_NOTE"] = canary + "-env"
	p.ok("", "remember", "Deploys go through "+canary+"-memory", "--event-type", "decision", "--project", "demo")
	mark := func(m map[string]any) {
		m["transcript_path"] = "/home/u/" + canary + "-transcript.jsonl"
		m["x_host_note_canary"] = canary + "-note"
		m["session_id"] = canary + "-session"
	}
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", mark)); r.code != 0 {
		t.Fatalf("hook: %s", r.stderr)
	}
	hint := fmt.Sprintf(`{"agent_profile":"pi","workflow_id":"w","session_id":"s","task_hint":"how do we ship %s-hint safely"}`, canary)
	if r := p.run(hint, "integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start"); r.code != 0 {
		t.Fatalf("pi preflight: %s", r.stderr)
	}
	_, b := auditReport(t, p)
	if !bytes.Contains(b, []byte(`<article id="h-pi">`)) {
		t.Fatal("the page lacks the harness that received the task hint")
	}
	for _, secret := range []string{canary, p.dir, p.home, filepath.Dir(p.dir), p.env["CODEX_HOME"], "my project"} {
		if i := bytes.Index(b, []byte(secret)); i >= 0 {
			t.Errorf("the page holds %q: ...%s...", secret, b[max(0, i-60):min(len(b), i+60)])
		}
	}
}

// chromiumBin is the headless browser of the rendering tests: skipped
// without one, except in CI (CI=true), which must install it.
func chromiumBin(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true and no chromium on PATH: .ci/run installs Debian's chromium (apt-get install -y chromium)")
	}
	t.Skip("no chromium on PATH: the rendering test needs a headless Chromium (Debian: apt-get install -y chromium); under CI=true this fails")
	return ""
}

// rendering is what headless Chromium made of a page.
type rendering struct {
	dom     string
	shot    image.Image
	console []string // console messages and uncaught errors
}

// renderPage loads the file in headless Chromium twice, for a screenshot
// and for the DOM after load, with no network (every host resolves to
// nothing) and the console logged to stderr.
func renderPage(t *testing.T, bin, page string) rendering {
	t.Helper()
	dir := t.TempDir()
	run := func(name string, extra ...string) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, name), "--host-resolver-rules=MAP * ~NOTFOUND",
			"--enable-logging=stderr", "--v=0", "--window-size=1280,1800"}, extra...)
		cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %s: %v\n%s", name, err, errb.String())
		}
		return out.String(), errb.String()
	}
	shot := filepath.Join(dir, "shot.png")
	_, log1 := run("shot", "--screenshot="+shot)
	dom, log2 := run("dom", "--dump-dom")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return rendering{dom: dom, shot: img, console: consoleLines(log1 + log2)}
}

// consoleLines picks Chromium's console records (":CONSOLE") and uncaught
// errors out of its log.
func consoleLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, ":CONSOLE") || strings.Contains(l, "Uncaught") {
			out = append(out, l)
		}
	}
	return out
}

// distinctColours counts the screenshot's colours, and whether one
// within a small distance of want is among them.
func distinctColours(img image.Image, want [3]uint8) (int, bool) {
	seen := map[[3]uint8]bool{}
	found := false
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}
			seen[c] = true
			if !found && near(c, want) {
				found = true
			}
		}
	}
	return len(seen), found
}

func near(a, b [3]uint8) bool {
	for i := range a {
		if d := int(a[i]) - int(b[i]); d > 6 || d < -6 {
			return false
		}
	}
	return true
}

// activeGreen is the palette's active (projections/report): its band is
// drawn on the page of any project with a proven harness.
var activeGreen = [3]uint8{0x2e, 0x7d, 0x32}

// The detector itself: a page with a script error is caught.
func TestConsoleDetector(t *testing.T) {
	bin := chromiumBin(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(page, []byte(`<!DOCTYPE html><title>x</title><p>x</p><script>undefinedFunction()</script>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := renderPage(t, bin, page); len(r.console) == 0 {
		t.Fatal("an uncaught error went unnoticed")
	}
}

// The lifecycle project's page, rendered by a real browser: not blank
// (many colours, the active band among them), no console message, and
// its DOM names each harness with every state its timeline went through.
func TestAuditReportRendersInChromium(t *testing.T) {
	bin := chromiumBin(t)
	p := reportProject(t)
	page, _ := auditReport(t, p)
	r := renderPage(t, bin, page)
	if len(r.console) > 0 {
		t.Fatalf("console output:\n%s", strings.Join(r.console, "\n"))
	}
	if n, green := distinctColours(r.shot, activeGreen); n < 16 || !green {
		t.Fatalf("the screenshot looks blank: %d colours, active band drawn %v", n, green)
	}
	var rep struct {
		Harnesses []struct {
			HarnessID string `json:"harness_id"`
			State     string `json:"state"`
			Steps     []struct{ To string }
		} `json:"harnesses"`
	}
	if err := json.Unmarshal([]byte(p.ok("", "--json", "audit", "replay")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Harnesses) < 2 {
		t.Fatalf("replay lists %d harnesses", len(rep.Harnesses))
	}
	for _, h := range rep.Harnesses {
		sec := section(t, r.dom, `<article id="h-`+h.HarnessID+`">`, "</article>")
		for _, s := range h.Steps {
			if !strings.Contains(sec, ">"+s.To+"<") {
				t.Errorf("%s: the rendered page does not name state %s", h.HarnessID, s.To)
			}
		}
		if !strings.Contains(sec, ">"+h.State+"<") {
			t.Errorf("%s: the rendered page does not name its state %s", h.HarnessID, h.State)
		}
	}
	// The path the test drove, in the rendered DOM.
	for id, states := range map[string][]string{
		"claude-code": {"configured-awaiting-proof", "active", "needs-user-review"},
		"codex":       {"configured-awaiting-proof", "active", "needs-user-review"},
	} {
		sec := section(t, r.dom, `<article id="h-`+id+`">`, "</article>")
		for _, s := range states {
			if !strings.Contains(sec, ">"+s+"<") {
				t.Errorf("%s: no %s in the rendered timeline", id, s)
			}
		}
	}
}

// section is the text of dom from begin to the next end.
func section(t *testing.T, dom, begin, end string) string {
	t.Helper()
	i := strings.Index(dom, begin)
	if i < 0 {
		t.Fatalf("the rendered DOM has no %s", begin)
	}
	j := strings.Index(dom[i:], end)
	if j < 0 {
		t.Fatalf("the rendered DOM does not close %s", begin)
	}
	return dom[i : i+j]
}

// --at replays at an earlier instant and --since starts the window: the
// page before the drift shows Codex active, and a window opening after
// the last receipt holds no receipt and only the later changes.
func TestAuditReportWindow(t *testing.T) {
	p := reportProject(t)
	var rep struct {
		Harnesses []struct {
			HarnessID string `json:"harness_id"`
			Steps     []struct {
				Type       string    `json:"type"`
				RecordedAt time.Time `json:"recorded_at"`
			}
		} `json:"harnesses"`
	}
	if err := json.Unmarshal([]byte(p.ok("", "--json", "audit", "replay", "--harness", "codex")), &rep); err != nil {
		t.Fatal(err)
	}
	var drift time.Time
	for _, s := range rep.Harnesses[0].Steps {
		if s.Type == "bridge.drift_detected" {
			drift = s.RecordedAt
		}
	}
	if drift.IsZero() {
		t.Fatal("codex recorded no drift")
	}
	before := drift.Add(-time.Second).Format(time.RFC3339)
	_, b := auditReport(t, p, "--at", before, "--since", before)
	codex := section(t, string(b), `<article id="h-codex">`, "</article>")
	for _, want := range []string{`State: <span class="state" style="background:#2e7d32;color:#ffffff">active</span>`, "No state change in the window."} {
		if !strings.Contains(codex, want) {
			t.Errorf("codex before the drift lacks %q:\n%s", want, codex)
		}
	}
	if !bytes.Contains(b, []byte("0 receipts in the window; newest: -.")) {
		t.Error("the window after the last receipt still counts receipts")
	}
	_, b = auditReport(t, p, "--since", before)
	codex = section(t, string(b), `<article id="h-codex">`, "</article>")
	if strings.Count(codex, "<tr><td class=\"n\">") != 1 || !strings.Contains(codex, "<code>bridge.drift_detected</code>") {
		t.Errorf("the window from before the drift should hold the drift alone:\n%s", codex)
	}
}
