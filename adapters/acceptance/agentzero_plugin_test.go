package acceptance

// A fake Agent Zero plugin host: our own Go model of how the separately
// published tree_ring_memory plugin (releases 3.3.x, 3.4.1, 3.4.2) drives
// the core, written from what was observed of its activation code (issue
// 17, docs/adapters/agent-zero.md): its binary lookup, its version gate,
// the environment it gives each child process, the exact argv, working
// directory and stdin of its init, status and preflight calls, and the
// fields it reads back. Agent Zero itself is not involved; nothing here
// needs the network or an environment gate.

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// azVersionRE is the plugin's version gate, applied to the stripped
// stdout of `<bin> --version`.
var azVersionRE = regexp.MustCompile(`\btree-ring\s+(\d+)\.(\d+)\.(\d+)(?:[-+]\S+)?`)

// The variables the plugin removes from every child environment (identity
// and the coordinator capability), and the descriptor transport it sets
// only on its internal init, status and preflight calls.
var azStripped = []string{"TREE_RING_COORDINATOR_TOKEN", "TREE_RING_AGENT_PROFILE", "TREE_RING_WORKFLOW_ID",
	"TREE_RING_SESSION_ID", "TREE_RING_OPERATION_ID"}

const azDescriptorEnv = "TREE_RING_AGENT_ZERO_PLUGIN_MANIFEST"

// azBindingArguments is the command contract the plugin requires of the
// passive binding, element by element.
var azBindingArguments = []string{"--root", ".tree-ring", "integrations", "preflight", "--harness", "agent-zero",
	"--input-json-stdin", "--context-format", "json"}

// The plugin's bounds on a preflight response.
const (
	azMaxContextChars = 16000
	azMaxResults      = 8
)

// azBuildBinary compiles tree-ring into dir (go build's cache makes every
// build after the first a link).
func azBuildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "tree-ring")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/tree-ring").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// azRelease is one plugin release as the host sees it: its descriptor and
// the CLI version its gate requires (cli.required_version; 3.4.1 ships
// 0.15.6, its descriptor's min, and the host takes min for the others).
type azRelease struct {
	plugin, from, series string
}

func (r azRelease) descriptor() string {
	return `{
  "schema_version": 1,
  "kind": "tree-ring-agent-zero-plugin-capability",
  "plugin_id": "tree_ring_memory",
  "plugin_version": "` + r.plugin + `",
  "activation_protocol_version": 1,
  "tree_ring_version": {
    "min": "` + r.from + `",
    "minor": "` + r.series + `"
  },
  "enabled": true
}
`
}

func (r azRelease) pluginYAML() string {
	return "name: tree_ring_memory\ntitle: Tree Ring Memory\ndescription: Agent Zero bridge to Tree Ring Memory.\nversion: " +
		r.plugin + "\nsettings_sections:\n  - agent\n  - developer\nper_project_config: true\nper_agent_config: true\n"
}

// azHost is one Agent Zero installation with the plugin and one mounted
// project.
type azHost struct {
	t          *testing.T
	a0         string // the Agent Zero root: the working directory of status and preflight
	pluginRoot string
	project    string   // the mounted project (canonical, absolute)
	binDir     string   // on PATH
	env        []string // the Agent Zero process's own environment
	canaries   []string // values planted in that environment that must never reach the core
	outputs    [][]byte // every byte the core printed
}

// azNewHost lays out an Agent Zero root with the plugin release rel, a
// mounted project and a PATH directory holding a copy of the binary built
// at built.
func azNewHost(t *testing.T, built string, rel azRelease) *azHost {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &azHost{t: t, a0: filepath.Join(base, "agent-zero")}
	h.pluginRoot = filepath.Join(h.a0, "usr", "plugins", "tree_ring_memory")
	h.project = filepath.Join(h.a0, "usr", "projects", "demo")
	h.binDir = filepath.Join(base, "bin")
	home := filepath.Join(base, "home")
	for _, d := range []string{h.pluginRoot, h.project, h.binDir, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	azWrite(t, filepath.Join(h.pluginRoot, "activation-capability.json"), rel.descriptor())
	azWrite(t, filepath.Join(h.pluginRoot, "plugin.yaml"), rel.pluginYAML())
	azWrite(t, filepath.Join(h.project, "README.md"), "# demo\n")
	bin, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.binDir, "tree-ring"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The host process inherits identity, a coordinator capability and a
	// stray descriptor; the plugin must strip all of them.
	h.env = []string{"PATH=" + h.binDir + string(os.PathListSeparator) + "/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8",
		azDescriptorEnv + "=" + filepath.Join(base, "elsewhere", "activation-capability.json")}
	for i, k := range azStripped {
		v := fmt.Sprintf("canary-%d-7f3a9c", i)
		if k == "TREE_RING_COORDINATOR_TOKEN" {
			v = "trcap_v1_" + strings.Repeat("ab", 32)
		}
		h.env = append(h.env, k+"="+v)
		h.canaries = append(h.canaries, v)
	}
	return h
}

func azWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (h *azHost) descriptorPath() string {
	return filepath.Join(h.pluginRoot, "activation-capability.json")
}

// childEnv is the plugin's child environment: the host's, without the
// identity and coordinator variables and without any inherited descriptor,
// plus the plugin's own descriptor when the call is one of its three
// activation calls.
func (h *azHost) childEnv(descriptor bool) []string {
	var env []string
	for _, kv := range h.env {
		k, _, _ := strings.Cut(kv, "=")
		if k == azDescriptorEnv || azContains(azStripped, k) {
			continue
		}
		env = append(env, kv)
	}
	if descriptor {
		env = append(env, azDescriptorEnv+"="+h.descriptorPath())
	}
	return env
}

func azContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (h *azHost) getenv(k string) string {
	for _, kv := range h.env {
		if key, v, _ := strings.Cut(kv, "="); key == k {
			return v
		}
	}
	return ""
}

func (h *azHost) setenv(k, v string) {
	for i, kv := range h.env {
		if key, _, _ := strings.Cut(kv, "="); key == k {
			h.env[i] = k + "=" + v
			return
		}
	}
	h.env = append(h.env, k+"="+v)
}

// resolveBinary is the plugin's lookup: tree-ring on PATH, else the
// project's .tree-ring/bin/tree-ring.
func (h *azHost) resolveBinary() (string, error) {
	candidates := []string{}
	for _, dir := range filepath.SplitList(h.getenv("PATH")) {
		if dir != "" {
			candidates = append(candidates, filepath.Join(dir, "tree-ring"))
		}
	}
	candidates = append(candidates, filepath.Join(h.project, ".tree-ring", "bin", "tree-ring"))
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", errors.New("tree-ring is not installed for this runtime")
}

type azResult struct {
	code           int
	stdout, stderr string
}

// run executes one child process as the plugin does and records its output.
func (h *azHost) run(bin, cwd string, descriptor bool, stdin string, args ...string) azResult {
	h.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = cwd, h.childEnv(descriptor)
	for _, kv := range cmd.Env {
		for _, c := range h.canaries {
			if strings.Contains(kv, c) {
				h.t.Fatalf("the child environment keeps %s", kv)
			}
		}
	}
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("%v: %v", args, err)
	}
	h.outputs = append(h.outputs, out.Bytes(), errb.Bytes())
	return azResult{code, out.String(), errb.String()}
}

// gate is the plugin's version check: `<bin> --version` (no descriptor,
// the host's working directory), the regex on its stripped stdout, then
// the same MAJOR.MINOR as required and at least required.
func (h *azHost) gate(bin, required string) (string, error) {
	r := h.run(bin, h.a0, false, "", "--version")
	if r.code != 0 {
		return "", fmt.Errorf("--version exited %d: %s", r.code, r.stderr)
	}
	m := azVersionRE.FindStringSubmatch(strings.TrimSpace(r.stdout))
	if m == nil {
		return "", errors.New("Unable to parse the installed tree-ring version.")
	}
	found := m[1] + "." + m[2] + "." + m[3]
	f, q := azTriple(h.t, found), azTriple(h.t, required)
	if f[0] != q[0] || f[1] != q[1] || azLess(f, q) {
		return found, fmt.Errorf("Unsupported tree-ring version %s; this plugin requires %s through %d.%d.x.", found, required, q[0], q[1])
	}
	return found, nil
}

func azTriple(t *testing.T, s string) [3]int {
	var v [3]int
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		t.Fatalf("version %q", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("version %q", s)
		}
		v[i] = n
	}
	return v
}

func azLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func (h *azHost) storeArg() string { return filepath.Join(h.project, ".tree-ring") }

// init is the plugin-driven project activation init: relative root, from
// the project, with the descriptor; the plugin requires a JSON object.
func (h *azHost) init(bin string) map[string]any {
	h.t.Helper()
	r := h.run(bin, h.project, true, "", "--root", ".tree-ring", "--json", "init")
	if r.code != 0 {
		h.t.Fatalf("init: %+v", r)
	}
	return azObject(h.t, "init", r.stdout)
}

// status is the plugin's activation status: absolute root and source root,
// from the Agent Zero root, with the descriptor; without it, it is what an
// ordinary host shell sees.
func (h *azHost) status(bin string, descriptor bool) map[string]any {
	h.t.Helper()
	r := h.run(bin, h.a0, descriptor, "", "--root", h.storeArg(), "--json", "integrations", "status", "--source-root", h.project)
	if r.code != 0 {
		h.t.Fatalf("status: %+v", r)
	}
	return azObject(h.t, "status", r.stdout)
}

// preflight is the plugin's lifecycle preflight: absolute root, from the
// Agent Zero root, the identity as sorted compact JSON on stdin.
func (h *azHost) preflight(bin string, identity map[string]string) azResult {
	h.t.Helper()
	stdin, err := json.Marshal(identity) // encoding/json sorts map keys and writes no spaces
	if err != nil {
		h.t.Fatal(err)
	}
	return h.run(bin, h.a0, true, string(stdin), "--root", h.storeArg(), "--json", "integrations", "preflight",
		"--harness", "agent-zero", "--input-json-stdin", "--context-format", "json")
}

func azObject(t *testing.T, what, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		t.Fatalf("%s: not a JSON object: %q", what, s)
	}
	return m
}

// azBinding is what the plugin takes from the project before preflight.
type azBinding struct {
	storeID, fingerprint string
	protocol             int64
	cliVersion           string
}

// loadBinding applies the plugin's checks of activation.json and of the
// passive binding .tree-ring/activation/agent-zero.json.
func (h *azHost) loadBinding() (azBinding, error) {
	var b azBinding
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	read := func(rel string) (map[string]any, error) {
		data, err := os.ReadFile(filepath.Join(h.project, ".tree-ring", rel))
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("%s is not a JSON object", rel)
		}
		return m, nil
	}
	ident := func(m map[string]any, k string) (string, bool) {
		s, ok := m[k].(string)
		return s, ok && strings.TrimSpace(s) != "" && len(s) <= 200
	}
	one := func(m map[string]any, k string) bool { n, ok := m[k].(json.Number); return ok && n.String() == "1" }
	m, err := read("activation.json")
	if err != nil {
		return b, err
	}
	var ok1, ok2 bool
	b.storeID, ok1 = ident(m, "store_id")
	b.cliVersion, ok2 = ident(m, "cli_version")
	b.fingerprint, _ = m["project_root_fingerprint"].(string)
	if _, harnesses := m["harnesses"].(map[string]any); !one(m, "schema_version") || !one(m, "protocol_version") || !ok1 || !ok2 ||
		!hex64.MatchString(b.fingerprint) || !harnesses {
		return b, fmt.Errorf("activation.json fails the plugin's checks: %v", m)
	}
	b.protocol = 1
	bind, err := read("activation/agent-zero.json")
	if err != nil {
		return b, err
	}
	cp, _ := bind["command_protocol"].(map[string]any)
	var args []string
	if list, ok := cp["arguments"].([]any); ok {
		for _, a := range list {
			s, _ := a.(string)
			args = append(args, s)
		}
	}
	if !one(bind, "protocol_version") || bind["store_id"] != b.storeID || bind["project_root_fingerprint"] != b.fingerprint ||
		bind["memory_root"] != ".tree-ring" || cp["command"] != "tree-ring" || strings.Join(args, "\x00") != strings.Join(azBindingArguments, "\x00") ||
		cp["stdin"] != "json" || cp["stdout"] != "json" {
		return b, fmt.Errorf("the binding fails the plugin's checks: %v", bind)
	}
	return b, nil
}

// azValidateContext is the plugin's check of a preflight response.
func azValidateContext(resp map[string]any, b azBinding) error {
	if resp["state"] != "active" {
		return errors.New("Tree Ring preflight did not return active context.")
	}
	ctx, _ := resp["context"].(string)
	if strings.TrimSpace(ctx) == "" {
		return errors.New("Tree Ring preflight returned empty context.")
	}
	if utf8.RuneCountInString(ctx) > azMaxContextChars {
		return errors.New("Tree Ring preflight context exceeded the prompt safety bound.")
	}
	rc, ok := resp["receipt"].(map[string]any)
	switch {
	case !ok:
		return errors.New("Tree Ring preflight did not return a receipt.")
	case rc["harness_id"] != "agent-zero":
		return errors.New("Tree Ring preflight receipt named the wrong harness.")
	case rc["protocol_version"] != json.Number(strconv.FormatInt(b.protocol, 10)):
		return errors.New("Tree Ring preflight receipt used the wrong protocol.")
	case rc["store_id"] != b.storeID:
		return errors.New("Tree Ring preflight receipt named the wrong store.")
	case rc["project_root_fingerprint"] != b.fingerprint:
		return errors.New("Tree Ring preflight receipt named the wrong project.")
	case rc["status"] != "success":
		return errors.New("Tree Ring preflight receipt was not successful.")
	}
	n, ok := rc["result_count"].(json.Number)
	count, err := n.Int64()
	if !ok || err != nil || count < 0 || count > azMaxResults {
		return errors.New("Tree Ring preflight receipt had an invalid result count.")
	}
	return nil
}

// prove runs the plugin's preflight for identity with bin and applies the
// plugin's checks of the response.
func (h *azHost) prove(bin string, b azBinding, identity map[string]string) {
	h.t.Helper()
	r := h.preflight(bin, identity)
	if r.code != 0 || r.stderr != "" {
		h.t.Fatalf("preflight %v: %+v", identity, r)
	}
	if err := azValidateContext(azObject(h.t, "preflight", r.stdout), b); err != nil {
		h.t.Fatalf("preflight %v: %v\n%s", identity, err, r.stdout)
	}
}

// azAgentZero finds Agent Zero's entry in a status or init report.
func azAgentZero(t *testing.T, what string, rep map[string]any) map[string]any {
	t.Helper()
	list, _ := rep["integrations"].([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && m["id"] == "agent-zero" {
			return m
		}
	}
	t.Fatalf("%s: no agent-zero entry: %v", what, rep)
	return nil
}

// azCheckStatus asserts Agent Zero's state in a status report and the
// top-level fields the plugin's dashboard reads: present and equal to the
// entry when the call is descriptor-scoped, absent otherwise.
func azCheckStatus(t *testing.T, what string, rep map[string]any, descriptor bool, want string) {
	t.Helper()
	e := azAgentZero(t, what, rep)
	if e["state"] != want {
		t.Fatalf("%s: agent-zero %v, want %s (%v)", what, e["state"], want, e)
	}
	_, entryAge := e["receipt_age_seconds"]
	age, topAge := rep["receipt_age_seconds"]
	if !descriptor {
		for _, k := range []string{"state", "next_step", "receipt_age_seconds"} {
			if _, ok := rep[k]; ok {
				t.Errorf("%s: top-level %s outside the descriptor: %v", what, k, rep)
			}
		}
		return
	}
	if rep["state"] != want || rep["next_step"] != e["next_step"] || rep["next_step"] == "" || topAge != entryAge || (want == "active") != topAge {
		t.Errorf("%s: top-level fields %v against entry %v", what, rep, e)
	}
	if topAge {
		if n, ok := age.(json.Number); !ok || n.String() != e["receipt_age_seconds"].(json.Number).String() || strings.HasPrefix(n.String(), "-") {
			t.Errorf("%s: receipt_age_seconds %v", what, age)
		}
	}
}

// azTree hashes every regular file under dir.
func azTree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil {
			sums[p] = sha256.Sum256(data)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// checkPrivate checks that nothing the core wrote or printed holds a planted
// environment value, the descriptor's or the Agent Zero root's absolute
// path, or the project's absolute path.
func (h *azHost) checkPrivate() {
	h.t.Helper()
	secrets := append([]string{h.pluginRoot, h.a0, h.project}, h.canaries...)
	blobs := map[string][]byte{}
	for i, o := range h.outputs {
		blobs[fmt.Sprintf("output %d", i)] = o
	}
	filepath.WalkDir(filepath.Join(h.project, ".tree-ring"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && filepath.Base(filepath.Dir(p)) != "bin" {
			data, _ := os.ReadFile(p)
			blobs[p] = data
		}
		return nil
	})
	for name, data := range blobs {
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				h.t.Errorf("%s contains %q", name, s)
			}
		}
	}
}

// The three invocations, run as the plugin runs them, take each compatible
// release from needs-plugin through configured-awaiting-proof to active.
func TestAgentZeroPluginCompatibleReleases(t *testing.T) {
	releases := []azRelease{
		{"3.3.0", "0.15.3", "0.15"},
		{"3.3.1", "0.15.3", "0.15"},
		{"3.4.1", "0.15.6", "0.15"},
		{"3.4.2", "0.15.6", "0.15"},
	}
	built := azBuildBinary(t, t.TempDir())
	for _, rel := range releases {
		t.Run(rel.plugin, func(t *testing.T) {
			h := azNewHost(t, built, rel)
			before := azTree(t, h.project)
			bin, err := h.resolveBinary()
			if err != nil || filepath.Dir(bin) != h.binDir {
				t.Fatalf("binary lookup: %s %v", bin, err)
			}
			found, err := h.gate(bin, rel.from)
			if err != nil {
				t.Fatalf("version gate: %v", err)
			}
			if ver := h.run(bin, h.a0, false, "", "version"); ver.stdout != string(h.outputs[0]) {
				t.Errorf("version %q and --version %q differ", ver.stdout, h.outputs[0])
			}

			rep := h.init(bin)
			if rep["ok"] != true {
				t.Fatalf("init: %v", rep)
			}
			// The plugin runs init with its descriptor: init prints what
			// descriptor-scoped status says (one rule), while the manifest
			// records needs-plugin (checked below).
			if s := azAgentZero(t, "init", rep)["state"]; s != "configured-awaiting-proof" {
				t.Errorf("init: agent-zero %v", s)
			}
			b, err := h.loadBinding()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(b.cliVersion, found+"+") {
				t.Errorf("cli_version %q, --version %s", b.cliVersion, found)
			}
			azCheckStatus(t, "host shell", h.status(bin, false), false, "needs-plugin")
			azCheckStatus(t, "descriptor-scoped", h.status(bin, true), true, "configured-awaiting-proof")

			main := map[string]string{"agent_profile": "agent0", "session_id": "chat-1", "workflow_id": "chat-1"}
			sub := map[string]string{"agent_profile": "researcher", "session_id": "chat-1-sub-1", "workflow_id": "chat-1"}
			h.prove(bin, b, main)
			h.prove(bin, b, sub)
			azCheckStatus(t, "after preflight", h.status(bin, true), true, "active")
			azCheckStatus(t, "host shell after preflight", h.status(bin, false), false, "needs-plugin")
			if nb, err := h.loadBinding(); err != nil || nb != b {
				t.Errorf("the binding moved: %+v %v", nb, err)
			}
			m, _ := os.ReadFile(filepath.Join(h.project, ".tree-ring", "activation.json"))
			if !bytes.Contains(m, []byte(`"agent-zero": {`)) || !bytes.Contains(m, []byte(`"state": "needs-plugin"`)) {
				t.Errorf("the manifest record left needs-plugin:\n%s", m)
			}
			if r := h.run(bin, h.project, false, "", "--root", ".tree-ring", "audit", "verify"); r.code != 0 {
				t.Errorf("audit verify: %+v", r)
			}
			for p, sum := range before {
				if after := azTree(t, h.project)[p]; after != sum {
					t.Errorf("%s changed", p)
				}
			}
			h.checkPrivate()
		})
	}
}

// Without tree-ring on PATH the plugin falls back to the project's
// .tree-ring/bin/tree-ring, which then passes the gate and the preflight.
func TestAgentZeroPluginProjectBinary(t *testing.T) {
	rel := azRelease{"3.4.1", "0.15.6", "0.15"}
	h := azNewHost(t, azBuildBinary(t, t.TempDir()), rel)
	bin, _ := h.resolveBinary()
	h.init(bin)
	local := filepath.Join(h.project, ".tree-ring", "bin", "tree-ring")
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, data, 0o755); err != nil {
		t.Fatal(err)
	}
	h.setenv("PATH", "/usr/bin:/bin")
	if got, err := h.resolveBinary(); err != nil || got != local {
		t.Fatalf("lookup without PATH: %s %v", got, err)
	}
	if _, err := h.gate(local, rel.from); err != nil {
		t.Fatal(err)
	}
	b, err := h.loadBinding()
	if err != nil {
		t.Fatal(err)
	}
	h.prove(local, b, map[string]string{"agent_profile": "agent0", "session_id": "s", "workflow_id": "s"})
	azCheckStatus(t, "status", h.status(local, true), true, "active")
	h.checkPrivate()
}

// A descriptor of another series is refused by the core (even with the
// plugin's gate bypassed) with both versions named, and the harness stays
// needs-plugin; that plugin's own gate refuses this core too.
func TestAgentZeroPluginOtherSeries(t *testing.T) {
	rel := azRelease{"3.5.0", "0.16.0", "0.16"}
	h := azNewHost(t, azBuildBinary(t, t.TempDir()), rel)
	bin, _ := h.resolveBinary()
	if _, err := h.gate(bin, rel.from); err == nil ||
		err.Error() != "Unsupported tree-ring version 0.15.13; this plugin requires 0.16.0 through 0.16.x." {
		t.Errorf("gate: %v", err)
	}
	if rep := h.init(bin); rep["ok"] != true {
		t.Fatalf("init: %v", rep)
	}
	azCheckStatus(t, "descriptor-scoped", h.status(bin, true), true, "needs-plugin")
	r := h.preflight(bin, map[string]string{"agent_profile": "agent0", "session_id": "s", "workflow_id": "s"})
	want := "tree-ring: Agent Zero plugin descriptor: plugin 3.5.0 requires Tree Ring 0.16.0 through 0.16.x; this core implements 0.15.13\n"
	if r.code != 2 || r.stdout != "" || r.stderr != want {
		t.Fatalf("preflight: exit %d stdout %q stderr %q, want %q", r.code, r.stdout, r.stderr, want)
	}
	azCheckStatus(t, "after the refusal", h.status(bin, true), true, "needs-plugin")
	receipts, _ := filepath.Glob(filepath.Join(h.project, ".tree-ring", "activation", "receipts", "*", "*"))
	if len(receipts) != 0 {
		t.Errorf("receipts after a refused preflight: %v", receipts)
	}
	h.checkPrivate()
}

// ensureInitialized is the plugin's memory bridge gate before every memory
// tool (remember, capture, evidence, recall, export, consolidate, forget,
// maintain, import, sync) and its install-time bootstrap: it creates
// exports/, imports/ and migrations/ under its storage root, and when
// <root>/memory.sqlite is absent it runs init with the absolute root from
// the Agent Zero root, without the descriptor, then requires memory.sqlite
// at SQLite schema 3. It returns the message the user sees, "" when the
// bridge would proceed.
func (h *azHost) ensureInitialized(bin string) string {
	h.t.Helper()
	root := h.storeArg()
	for _, d := range []string{"exports", "imports", "migrations"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			h.t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "memory.sqlite")); err == nil {
		h.t.Fatal("this core never writes memory.sqlite")
	}
	r := h.run(bin, h.a0, false, "", "--root", root, "--json", "init")
	if r.code != 0 {
		first, _, _ := strings.Cut(strings.TrimSpace(r.stderr), "\n")
		return first[:min(len(first), 500)]
	}
	if _, err := os.Stat(filepath.Join(root, "memory.sqlite")); err != nil {
		return "tree-ring init did not produce SQLite schema 3."
	}
	return ""
}

// The plugin's memory bridge cannot use this core's store: it looks for
// <root>/memory.sqlite at schema 3. Its first memory call shows the user
// the core's refusal of that init; the directories it creates under the
// store do not disturb activation, which still reaches active.
func TestAgentZeroPluginMemoryBridge(t *testing.T) {
	rel := azRelease{"3.4.1", "0.15.6", "0.15"}
	h := azNewHost(t, azBuildBinary(t, t.TempDir()), rel)
	bin, _ := h.resolveBinary()
	h.init(bin)
	before := azTree(t, filepath.Join(h.project, ".tree-ring"))
	// Messages name paths below the project relative to it.
	want := "tree-ring: --root .tree-ring is not this project's store (.tree-ring under --source-root); a different store is refused"
	if got := h.ensureInitialized(bin); got != want {
		t.Fatalf("memory bridge message:\n got %q\nwant %q", got, want)
	}
	for p, sum := range before {
		if azTree(t, filepath.Join(h.project, ".tree-ring"))[p] != sum {
			t.Errorf("the refused init changed %s", p)
		}
	}
	b, err := h.loadBinding()
	if err != nil {
		t.Fatal(err)
	}
	azCheckStatus(t, "with the bridge's directories", h.status(bin, true), true, "configured-awaiting-proof")
	h.prove(bin, b, map[string]string{"agent_profile": "agent0", "session_id": "s", "workflow_id": "s"})
	azCheckStatus(t, "after preflight", h.status(bin, true), true, "active")
}
