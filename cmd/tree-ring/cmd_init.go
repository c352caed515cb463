package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

type initOptions struct {
	DryRun bool
	Label  string
}

func (o *initOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.DryRun, "dry-run", false, "report what init would publish; create nothing, not even the store")
	fs.StringVar(&o.Label, "label", "", "record the store's fleet label (as `fleet label` does; default: none recorded, fleet identity then uses this host's name)")
}

func init() {
	register("init", "", "create the project store and publish every detected harness's bridge create-only", runInit)
}

// initEntry is one integration in init's JSON output: the status entry of
// the protocol plus the paths this run created.
type initEntry struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	State        string   `json:"state"`
	Capability   string   `json:"capability"`
	ManagedPaths []string `json:"managed_paths,omitempty"`
	ChangedPaths []string `json:"changed_paths"`
	NextStep     string   `json:"next_step"`
}

type awareness struct {
	CreatedCount  int `json:"created_count"`
	ExistingCount int `json:"existing_count"`
}

func runInit(ctx context.Context, g *Globals, o *initOptions, args []string) error {
	if len(args) > 0 {
		return usagef("init takes no arguments")
	}
	pr, err := resolveProject(g)
	if err != nil {
		return err
	}
	defer pr.root.Close()
	if g.discovered != "" && !g.JSON {
		// Run from a subdirectory: the project is the root the hooks
		// resolve (docs/README: never a second, nested store).
		fmt.Fprintf(g.Stderr, "tree-ring: initializing the project root %s (the git checkout's top level, which the hooks use), not the working directory\n", pr.canonical)
	}
	in := initInput(adapters.Detect(pr.canonical, g.Getenv("HOME")))
	if o.DryRun {
		return pr.initDryRun(ctx, g, in)
	}
	storeID, found, err := pr.initStore(ctx, g)
	if err != nil {
		return err
	}
	if err := ensureStoreKey(ctx, g, pr, o.Label); err != nil {
		return err
	}
	aw, err := pr.installAwareness()
	if err != nil {
		return err
	}
	if err := pr.recordGuidance(ctx, g); err != nil {
		return err
	}
	if err := pr.installProgram(ctx, g); err != nil {
		return err
	}
	plan, err := pr.plan(ctx, g, false, in, events.RunCmdInit)
	if err != nil {
		return err
	}
	ev, err := evaluate(ctx, g, pr, g.Now())
	if err != nil {
		return err
	}
	gitignore, inGit := pr.readGitignore()
	return printInit(g, plan, ev, storeID, found, aw, inGit && !ignoresStore(gitignore))
}

// assessedEntry is outcome o's init entry with the state status gives right
// after init (one status rule, activation.Assess, serves both): the plan
// cannot see what status reads live, such as a host's trust decision. The
// plan's next step stays where both agree (it names the snippet to paste
// or the files created); where status differs, its step is printed. A
// review the plan reports stands: init exits 5 for it, and status shows it
// too unless a check status makes first fails (a missing plugin).
func assessedEntry(o *activation.Outcome, ev *evaluation) initEntry {
	e := initEntry{
		ID: o.Adapter.ID, Name: o.Adapter.Name, State: string(o.State), Capability: string(o.Adapter.Capability),
		ChangedPaths: o.ChangedPaths, NextStep: o.NextStep,
	}
	for _, h := range ev.harnesses {
		if h.adapter.ID == o.Adapter.ID && h.State != o.State && o.State != fsm.NeedsUserReview {
			e.State, e.NextStep = string(h.State), h.Next
		}
	}
	if e.ChangedPaths == nil {
		e.ChangedPaths = []string{}
	}
	return e
}

// initInput is init's activation input: the detected harnesses plus every
// passive binding (Agent Zero's), which no marker announces.
func initInput(dets []adapters.Detection) activation.Input {
	targets := harnessIDs(func(a *adapters.Adapter) bool { return a.PassiveBinding })
	for _, d := range dets {
		if d.Detected() {
			targets = append(targets, d.Adapter.ID)
		}
	}
	return activation.Input{Command: activation.Init, Targets: targets, Detections: detectionsByID(dets)}
}

// initDryRun prints what init would do, writing nothing: the adoption of
// another writer's manifest, or the plan.
func (pr *project) initDryRun(ctx context.Context, g *Globals, in activation.Input) error {
	if ad, err := pr.dryAdoption(g); err != nil || ad != nil {
		if err != nil {
			return err
		}
		return printInitDryRun(g, &activation.Plan{Command: activation.Init, Outcomes: ad.Outcomes}, nil)
	}
	plan, err := pr.plan(ctx, g, true, in, events.RunCmdInit)
	if err != nil {
		return err
	}
	return printInitDryRun(g, plan, pr.predict(g, plan))
}

// predict is, per harness, the state status will give once the plan is
// applied (activation.Predict: the host's trust and hooks switch read
// live), so that a dry run agrees with the status after init.
func (pr *project) predict(g *Globals, plan *activation.Plan) map[string]activation.Status {
	out := map[string]activation.Status{}
	for _, o := range plan.Outcomes {
		out[o.Adapter.ID] = activation.Predict(o, &liveEvidence{g: g, pr: pr, a: o.Adapter})
	}
	return out
}

// readGitignore returns the project's top-level .gitignore, read through
// the pinned root; ok is false when the project is not a git checkout (no
// .git entry), where no ignore line is suggested.
func (pr *project) readGitignore() (data []byte, ok bool) {
	if git, err := pr.root.Exists(".git"); err != nil || !git {
		return nil, false
	}
	e, err := pr.root.ReadFile(".gitignore", 1<<20)
	if err != nil {
		return nil, true
	}
	return e.Data, true
}

// initStore opens (creating) the store and records store.initialized once,
// minting the store id from crypto/rand, or adopting the one of the
// activation manifest another writer left (adopt.go). It runs in its own transaction
// before anything is published, so every bridge names a recorded store.
// found is true when the store was initialized already.
func (pr *project) initStore(ctx context.Context, g *Globals) (id string, found bool, err error) {
	if exists, err := pr.hasLedger(); err != nil {
		return "", false, err
	} else if exists {
		if id, done, err := pr.existingStore(g); done || err != nil {
			return id, err == nil, err
		}
	}
	id, err = pr.createStore(ctx, g)
	return id, false, err
}

// createStore is initStore where no initialized ledger was found.
func (pr *project) createStore(ctx context.Context, g *Globals) (string, error) {
	// A manifest another writer left (the Rust Tree Ring) is adopted with
	// its store id, never replaced by a new one; decided before the ledger
	// is created, so that a refused manifest leaves nothing behind.
	ad, err := pr.adoption(g)
	if err != nil {
		return "", err
	}
	open := func() (*bolt.Store, error) { return g.OpenStore(false) }
	if ad != nil {
		open = g.openAdoptingStore
	}
	st, err := open()
	if err != nil {
		return "", err
	}
	defer st.Close()
	snap := newSnapshot()
	if err := snap.read(st); err != nil {
		return "", err
	}
	if err := pr.checkStore(snap); err != nil {
		return "", err
	}
	switch {
	case snap.storeID != "":
		return snap.storeID, nil
	case ad != nil:
		return pr.recordAdoption(ctx, g, st, snap, ad)
	case snap.versions[events.StoreStream] != 0:
		return "", fmt.Errorf("the store stream has events but no store.initialized; run `tree-ring audit verify`")
	}
	return pr.recordStoreInitialized(ctx, g, st)
}

// existingStore reads the ledger that exists under the root: done is true
// when it is initialized (id is its store id) or refused (err); false when
// the write open must complete an older build's interrupted init.
func (pr *project) existingStore(g *Globals) (id string, done bool, err error) {
	ro, err := pr.openExisting(g)
	var ue *bolt.UninitializedError
	switch {
	case errors.As(err, &ue):
		// An older build's interrupted init: the write open completes it.
		return "", false, nil
	case err != nil:
		return "", true, err
	}
	snap := newSnapshot()
	err = snap.read(ro)
	ro.Close()
	if err != nil {
		return "", true, err
	}
	if err := pr.checkStore(snap); err != nil || snap.storeID != "" {
		return snap.storeID, true, err
	}
	return "", false, nil
}

// openExisting opens the existing ledger read-only. An older build's index
// format or projection layout is migrated first: init is the upgrade (it installs this build's
// program too), so its write open migrates it; then the store is read as
// any other. Not while another build stands at the installed program: the
// hooks would run it against a format it may not read.
func (pr *project) openExisting(g *Globals) (*bolt.Store, error) {
	ro, err := g.OpenStore(true)
	if !bolt.NeedsMigration(err) {
		return ro, err
	}
	if err := pr.programAllowsMigration(g); err != nil {
		return nil, err
	}
	opts := g.storeOptions()
	opts.Migrate = true
	rw, err := g.openStore(opts)
	if err != nil {
		return nil, err
	}
	rw.Close()
	return g.OpenStore(true)
}

// recordStoreInitialized mints the store id from crypto/rand and records
// store.initialized in st.
func (pr *project) recordStoreInitialized(ctx context.Context, g *Globals, st *bolt.Store) (string, error) {
	id, err := adapters.NewStoreID(nil)
	if err != nil {
		return "", err
	}
	e, err := g.Factory("cli").New(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{
		StoreID: id, Format: 1, ProjectRootFingerprint: pr.fingerprint, CLIVersion: Version(),
	})
	if err != nil {
		return "", err
	}
	if _, err := st.Append(ctx, events.StoreStream, 0, e); err != nil {
		return "", err
	}
	return id, nil
}

// installAwareness creates the guidance files under .tree-ring when
// absent; existing ones are never replaced. Each is published atomically
// (temporary file, fsync, link), so a failure or a kill leaves no partial
// final file; a partial one an older build left (a strict prefix of what
// this build installs, empty included) is refused with the repair instead
// of being kept as if complete. The program is installProgram's.
func (pr *project) installAwareness() (awareness, error) {
	var aw awareness
	for _, f := range adapters.GuidanceFiles() {
		created, err := pr.installOwn(f.Path, f.Data, f.Mode)
		if err != nil {
			return aw, err
		}
		if created {
			aw.CreatedCount++
		} else {
			aw.ExistingCount++
		}
	}
	return aw, nil
}

// installOwn creates one of Tree Ring's own files create-only; an existing
// one is kept unless it is a partial copy (adapters.CheckOwnCopy).
func (pr *project) installOwn(rel string, data []byte, mode uint32) (created bool, err error) {
	err = pr.root.CreateFile(rel, data, mode, 0o700)
	var ex *adapters.ExistsError
	if !errors.As(err, &ex) {
		return err == nil, err
	}
	have, err := pr.root.ReadFile(rel, len(data))
	var tl *adapters.TooLargeError
	switch {
	case errors.As(err, &tl):
		return false, nil // larger: not a prefix of this build's file
	case err != nil:
		return false, err
	}
	return false, adapters.CheckOwnCopy(rel, have.Data, data)
}

func managedPaths(plan *activation.Plan, id string) []string {
	if r, ok := plan.Manifest.Harnesses[id]; ok {
		return r.Paths()
	}
	return nil
}

func printInit(g *Globals, plan *activation.Plan, ev *evaluation, storeID string, found bool, aw awareness, suggestIgnore bool) error {
	var entries []initEntry
	for _, o := range plan.Outcomes {
		e := assessedEntry(o, ev)
		if st := fsm.State(e.State); st != fsm.NeedsUserReview && st != fsm.Unsupported {
			e.ManagedPaths = managedPaths(plan, o.Adapter.ID)
		}
		entries = append(entries, e)
	}
	if g.JSON {
		if err := writeJSON(g.Stdout, struct {
			OK             bool        `json:"ok"`
			DryRun         bool        `json:"dry_run"`
			StoreID        string      `json:"store_id"`
			Integrations   []initEntry `json:"integrations"`
			AgentAwareness awareness   `json:"agent_awareness"`
		}{true, false, storeID, entries, aw}); err != nil {
			return err
		}
		return activation.NeedsReview(plan.Outcomes)
	}
	if found {
		fmt.Fprintln(g.Stdout, "Tree Ring Memory: found the store initialized already; it is kept as it is.")
	} else {
		fmt.Fprintln(g.Stdout, "Tree Ring Memory initialized.")
	}
	for _, e := range entries {
		fmt.Fprintf(g.Stdout, "%s: %s\n", e.Name, e.State)
		if e.State != string(fsm.Active) {
			printNext(g.Stdout, e.NextStep)
		}
	}
	if suggestIgnore {
		fmt.Fprintln(g.Stdout, "Add this line to .gitignore (init never edits it): .tree-ring/")
		fmt.Fprintln(g.Stdout, "  it holds this checkout's ledger (memory text), receipts, binary and path-bound activation; see README \"What to commit\".")
	}
	return activation.NeedsReview(plan.Outcomes)
}

// ignoresStore reports whether a .gitignore's bytes ignore the store
// directory with one of the plain spellings of it (no pattern matching:
// a miss only prints the suggestion again).
func ignoresStore(gitignore []byte) bool {
	for _, line := range strings.Split(string(gitignore), "\n") {
		switch strings.TrimSpace(line) {
		case ".tree-ring", ".tree-ring/", "/.tree-ring", "/.tree-ring/", ".tree-ring/*", "/.tree-ring/*":
			return true
		}
	}
	return false
}

func printInitDryRun(g *Globals, plan *activation.Plan, predicted map[string]activation.Status) error {
	var rs []report
	// The JSON entries are init's (the same names for the same things,
	// docs/json.md): what a run would create is their changed_paths.
	var entries []initEntry
	for _, o := range plan.Outcomes {
		r := reportOf(o, true)
		if st, ok := predicted[o.Adapter.ID]; ok && st.State != o.State {
			// What status will say after init (the host's trust, its
			// hooks switch); a plan to apply keeps its own step first.
			r.State, r.NextStep = string(st.State), st.Next
			if o.Kind == activation.Publish && len(o.ChangedPaths) > 0 {
				r.NextStep = activation.NextPlan + " Then: " + st.Next
			}
		}
		rs = append(rs, r)
		entries = append(entries, initEntry{ID: o.Adapter.ID, Name: o.Adapter.Name, State: r.State,
			Capability: string(o.Adapter.Capability), ChangedPaths: r.ChangedPaths, NextStep: r.NextStep})
	}
	if g.JSON {
		if err := writeJSON(g.Stdout, struct {
			OK           bool        `json:"ok"`
			DryRun       bool        `json:"dry_run"`
			Integrations []initEntry `json:"integrations"`
		}{true, true, entries}); err != nil {
			return err
		}
		return activation.NeedsReview(plan.Outcomes)
	}
	fmt.Fprintln(g.Stdout, "Tree Ring Memory init (dry-run): nothing was created.")
	for _, r := range rs {
		fmt.Fprintf(g.Stdout, "%s: %s (dry-run)\n", r.HarnessID, r.State)
		if len(r.ChangedPaths) > 0 {
			fmt.Fprintf(g.Stdout, "  creates: %s\n", joinPaths(r.ChangedPaths))
		}
		printNext(g.Stdout, r.NextStep)
	}
	return activation.NeedsReview(plan.Outcomes)
}

func joinPaths(ps []string) string { return strings.Join(ps, ", ") }

// ensureStoreKey makes the store's fleet signing key when it has none
// (storekey.Ensure; docs/fleet.md, "Signed histories"): made once, before
// anything is published; a later init writes nothing. A label (init
// --label) is recorded after it unless the store already carries it.
func ensureStoreKey(ctx context.Context, g *Globals, pr *project, label string) error {
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	f := g.Factory("cli")
	if _, _, err = storekey.Ensure(ctx, g.Root, st, f); err != nil {
		// Named as the project sees it (.tree-ring/store.key), as every
		// other file init writes; never its contents.
		name := fleetsign.KeyFile
		if rel, rerr := filepath.Rel(pr.canonical, filepath.Join(g.Root, fleetsign.KeyFile)); rerr == nil && filepath.IsLocal(rel) {
			name = filepath.ToSlash(rel)
		}
		return fmt.Errorf("%s, the store's fleet signing key: %w", name, err)
	}
	if label != "" {
		if _, _, err := storekey.SetLabel(ctx, st, f, label); err != nil {
			return fmt.Errorf("the store's label: %w", err)
		}
	}
	return nil
}
