package adapters

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePi installs a fake npm Pi under prefix as npm does: the package
// directory with its package.json and dist/cli.js, and prefix/bin/pi a
// symlink to the entry script. It returns the bin directory (for PATH).
func fakePi(t *testing.T, prefix, packageJSON string) string {
	t.Helper()
	pkg := filepath.Join(prefix, "lib", "node_modules", "@earendil-works", "pi-coding-agent")
	for _, d := range []string{filepath.Join(pkg, "dist"), filepath.Join(prefix, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(pkg, "package.json"), packageJSON, 0o644)
	// dist/ has a package.json without a name, as ESM packages do.
	write(t, filepath.Join(pkg, "dist", "package.json"), `{"type":"module"}`, 0o644)
	// Never executed: status must only read it.
	write(t, filepath.Join(pkg, "dist", "cli.js"), "#!/bin/sh\ntouch \"$HOME/pi-ran\"\n", 0o755)
	if err := os.Symlink(filepath.Join("..", "lib", "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli.js"), filepath.Join(prefix, "bin", "pi")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(prefix, "bin")
}

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func TestPiTrust(t *testing.T) {
	const (
		old   = `{"name":"@mariozechner/pi-coding-agent","version":"0.73.1","bin":{"pi":"dist/cli.js"}}`
		gated = `{"name":"@earendil-works/pi-coding-agent","version":"1.6.0","bin":{"pi":"dist/cli.js"}}`
	)
	for _, c := range []struct {
		name      string
		pkg       string // "" installs no pi
		trust     string // trust.json ("" none)
		settings  string // settings.json ("" none)
		agentDir  bool   // trust files under $PI_CODING_AGENT_DIR instead of $HOME/.pi/agent
		want      TrustDecision
		wantStep  string
		otherPath bool // pi on PATH is not Pi's package
	}{
		{name: "no pi on PATH", want: GateUnknown, wantStep: "Tree Ring could not read the installed Pi's version"},
		{name: "0.73.1 has no gate", pkg: old, want: Trusted},
		{name: "0.73.1 ignores a distrust it cannot apply", pkg: old, trust: `{"PROJECT":false}`, want: Trusted},
		{name: "1.6.0 untrusted", pkg: gated, want: TrustUnknown, wantStep: "The installed Pi skips this project's extensions"},
		{name: "1.6.0 trusted", pkg: gated, trust: `{"PROJECT":true}`, want: Trusted},
		{name: "1.6.0 trusted through a parent", pkg: gated, trust: `{"PARENT":true}`, want: Trusted},
		{name: "the nearest decision wins", pkg: gated, trust: `{"PARENT":true,"PROJECT":false}`, want: Untrusted},
		{name: "1.6.0 trusted in PI_CODING_AGENT_DIR", pkg: gated, trust: `{"PROJECT":true}`, agentDir: true, want: Trusted},
		{name: "another project trusted", pkg: gated, trust: `{"PROJECT-other":true}`, want: TrustUnknown},
		{name: "malformed trust.json", pkg: gated, trust: `{"PROJECT":"yes"}`, want: TrustUnknown},
		{name: "defaultProjectTrust always", pkg: gated, settings: `{"theme":"dark","defaultProjectTrust":"always"}`, want: Trusted},
		{name: "a saved distrust beats always", pkg: gated, trust: `{"PROJECT":false}`, settings: `{"defaultProjectTrust":"always"}`, want: Untrusted},
		{name: "defaultProjectTrust ask", pkg: gated, settings: `{"defaultProjectTrust":"ask"}`, want: TrustUnknown},
		{name: "0.79.0 has the gate", pkg: strings.Replace(gated, "1.6.0", "0.79.0", 1), want: TrustUnknown},
		{name: "0.78.9 has none", pkg: strings.Replace(gated, "1.6.0", "0.78.9", 1), want: Trusted},
		{name: "malformed version", pkg: strings.Replace(gated, "1.6.0", "1.6", 1), want: GateUnknown},
		{name: "another package's pi", pkg: `{"name":"pi-other","version":"9.0.0"}`, want: GateUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			home, project := filepath.Join(base, "home"), filepath.Join(base, "src", "my project")
			env := map[string]string{"HOME": home, "PATH": filepath.Join(base, "empty-bin")}
			if c.pkg != "" {
				env["PATH"] += string(filepath.ListSeparator) + fakePi(t, filepath.Join(base, "npm"), c.pkg)
			}
			agent := filepath.Join(home, ".pi", "agent")
			if c.agentDir {
				agent = filepath.Join(base, "agent")
				env["PI_CODING_AGENT_DIR"] = agent
			}
			r := strings.NewReplacer("PROJECT", project, "PARENT", filepath.Dir(project))
			if c.trust != "" {
				write(t, filepath.Join(agent, "trust.json"), r.Replace(c.trust), 0o600)
			}
			if c.settings != "" {
				write(t, filepath.Join(agent, "settings.json"), c.settings, 0o600)
			}
			before := hashTree(t, base)
			got := piTrust(func(k string) string { return env[k] }, project)
			if got != c.want {
				t.Fatalf("decision %d, want %d", got, c.want)
			}
			if c.wantStep != "" && !strings.HasPrefix(piTrustStep(got), c.wantStep) {
				t.Errorf("step %q", piTrustStep(got))
			}
			if after := hashTree(t, base); after != before {
				t.Error("reading Pi's trust changed a file (or ran pi)")
			}
		})
	}
}

// hashTree lists every path under dir with its size and content: enough
// to see a file created or changed.
func hashTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		b.WriteString(p + "\n")
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			b.Write(data)
		}
		return nil
	})
	return b.String()
}

func TestPiTrustSteps(t *testing.T) {
	unknown, gated := piTrustStep(GateUnknown), piTrustStep(TrustUnknown)
	for _, want := range []string{"pi --approve", "~/.pi/agent/trust.json", "/trust", "open a new Pi session"} {
		if !strings.Contains(unknown, want) || !strings.Contains(gated, want) {
			t.Errorf("a step lacks %q", want)
		}
	}
	if !strings.Contains(unknown, "0.73") || strings.Contains(gated, "0.73") {
		t.Error("only the unknown-version step covers the release without a gate")
	}
}

func TestPiPackage(t *testing.T) {
	for _, c := range []struct {
		doc, name string
		v         [3]int
		ok        bool
	}{
		{`{"name":"@mariozechner/pi-coding-agent","version":"0.73.1"}`, "@mariozechner/pi-coding-agent", [3]int{0, 73, 1}, true},
		{`{"name":"@earendil-works/pi-coding-agent","version":"1.6.0-beta.2+b5","dependencies":{"x":"1"}}`, "@earendil-works/pi-coding-agent", [3]int{1, 6, 0}, true},
		{`{"type":"module"}`, "", [3]int{}, false},
		{`{"name":"left-pad","version":"1.0.0"}`, "left-pad", [3]int{}, false},
		{`{"name":"@earendil-works/pi-coding-agent","version":"01.6.0"}`, "@earendil-works/pi-coding-agent", [3]int{}, false},
		{`{"name":"@earendil-works/pi-coding-agent","version":"1.6.0-"}`, "@earendil-works/pi-coding-agent", [3]int{}, false},
		{`{"name":"@earendil-works/pi-coding-agent","version":"1.6.0.1"}`, "@earendil-works/pi-coding-agent", [3]int{}, false},
		{`{"name":"@earendil-works/pi-coding-agent","version":"1234567890.0.0"}`, "@earendil-works/pi-coding-agent", [3]int{}, false},
		{`{"name":"@earendil-works/pi-coding-agent","version":160}`, "@earendil-works/pi-coding-agent", [3]int{}, false},
		{`{"name":"@earendil-works/pi-coding-agent"}`, "@earendil-works/pi-coding-agent", [3]int{}, false},
		{`{"name":["@earendil-works/pi-coding-agent"],"version":"1.6.0"}`, "", [3]int{}, false},
		{`{"name":"@earendil-works/pi-coding-agent","version":"1.6.0"} {}`, "", [3]int{}, false},
		{`[]`, "", [3]int{}, false},
		{`null`, "", [3]int{}, false},
	} {
		name, v, err := PiPackage([]byte(c.doc))
		if name != c.name || (err == nil) != c.ok || c.ok && v != c.v {
			t.Errorf("%s: %q %v %v", c.doc, name, v, err)
		}
	}
}

func TestPiTrustFor(t *testing.T) {
	const p = "/home/u/src/app"
	for doc, want := range map[string]TrustDecision{
		`{"/home/u/src/app":true}`:                       Trusted,
		`{"/home/u/src/app/":true}`:                      Trusted,
		`{"/home/u":true}`:                               Trusted,
		`{"/":true}`:                                     Trusted,
		`{"/home/u/src/app":false}`:                      Untrusted,
		`{"/home/u":true,"/home/u/src/app":false}`:       Untrusted,
		`{"/home/u":false,"/home/u/src":true}`:           Trusted,
		`{"/home/u/src/application":true}`:               TrustUnknown,
		`{"/home/u/src/app/sub":true}`:                   TrustUnknown,
		`{}`:                                             TrustUnknown,
		`{"home/u/src/app":true}`:                        TrustUnknown, // relative key: refused whole
		`{"/home/u/src/app":true,"/x":"yes"}`:            TrustUnknown, // one wrong value refuses the document
		`{"/home/u/src/app":null}`:                       TrustUnknown,
		`{"/home/u/src/app":true} {"/home/u/src/app":1}`: TrustUnknown,
		`[true]`: TrustUnknown,
		``:       TrustUnknown,
	} {
		if got := PiTrustFor([]byte(doc), p); got != want {
			t.Errorf("%s: %d, want %d", doc, got, want)
		}
	}
}

func TestPiDefaultTrust(t *testing.T) {
	for doc, want := range map[string]string{
		`{"defaultProjectTrust":"always"}`:         "always",
		`{"defaultProjectTrust":"never","x":1}`:    "never",
		`{"defaultProjectTrust":"ask"}`:            "ask",
		`{"defaultProjectTrust":"yes"}`:            "",
		`{"defaultProjectTrust":true}`:             "",
		`{}`:                                       "",
		`not json`:                                 "",
		`{"defaultProjectTrust":"always"} garbage`: "",
	} {
		if got := PiDefaultTrust([]byte(doc)); got != want {
			t.Errorf("%s: %q, want %q", doc, got, want)
		}
	}
}

// FuzzPiTrustFor: the trust.json and package.json parsers never panic,
// are deterministic, and trust only through a key that is the project or
// one of its parents with the value true.
func FuzzPiTrustFor(f *testing.F) {
	for _, s := range []string{`{"/home/u/src/app":true}`, `{"/home/u":false,"/home/u/src/app":true}`, `{"/":true}`, `[]`, `{"a":1}`,
		`{"name":"@earendil-works/pi-coding-agent","version":"1.6.0"}`} {
		f.Add([]byte(s), "/home/u/src/app")
	}
	f.Fuzz(func(t *testing.T, doc []byte, project string) {
		if !filepath.IsAbs(project) {
			return
		}
		project = filepath.Clean(project)
		got := PiTrustFor(doc, project)
		if got != PiTrustFor(doc, project) {
			t.Fatal("nondeterministic")
		}
		if got == Trusted && !strings.Contains(string(doc), "true") {
			t.Fatalf("trusted without a true: %q", doc)
		}
		if got != Trusted && got != Untrusted && got != TrustUnknown {
			t.Fatalf("decision %d", got)
		}
		name, v, err := PiPackage(doc)
		if err == nil && (!piKnownPackage(name) || v[0] < 0) {
			t.Fatalf("accepted %q %v", name, v)
		}
		PiDefaultTrust(doc)
	})
}
