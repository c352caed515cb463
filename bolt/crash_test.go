package bolt

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/fold"
)

const crashChildEnv = "TREE_RING_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	if path := os.Getenv(sliceChildEnv); path != "" {
		sliceChild(path)
		return
	}
	if path := os.Getenv(migrateChildEnv); path != "" {
		migrateChild(path)
		return
	}
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// crashChild appends batches to the ledger at path forever, printing one
// "ack" line per append that returned success: positions and ids. The
// parent kills it with SIGKILL at a random moment.
func crashChild(path string) {
	round, _ := strconv.Atoi(os.Getenv("TREE_RING_CRASH_ROUND"))
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	st, err := Open(path, Options{LockTimeout: 10 * time.Second, Projections: []fold.Projection{testProjection()}})
	if err != nil {
		fail(err)
	}
	if round%3 == 2 {
		// Be killed mid-rebuild sometimes too: the next Open resumes it.
		if _, err := st.Rebuild(bg, nil); err != nil {
			fail(err)
		}
	}
	// Each round's ids carry its marker, so a retry in the next round never
	// collides with what an earlier one appended.
	f := &events.Factory{Now: eventstest.Clock(eventstest.Epoch, time.Nanosecond), NewID: eventstest.IDs(uint32(round + 1)), Actor: "crash"}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		stream := events.RunStream(fmt.Sprintf("r%d-%d", round, i%3))
		batch := make([]events.Envelope, 1+i%4)
		for j := range batch {
			batch[j] = f.Must(stream, events.TypeRunStarted, testRunPayload(stream, i))
		}
		var pos []uint64
		err := st.Update(bg, func(tx *Tx) error {
			if i%5 == 0 {
				if _, err := tx.PutBody([]byte(fmt.Sprintf("body %d %d", round, i))); err != nil {
					return err
				}
			}
			var err error
			pos, err = tx.Append(stream, AnyVersion, batch...)
			return err
		})
		if err != nil {
			fail(err)
		}
		var line strings.Builder
		line.WriteString("ack")
		for j := range batch {
			fmt.Fprintf(&line, " %d:%s", pos[j], batch[j].ID)
		}
		line.WriteByte('\n')
		out.WriteString(line.String())
		out.Flush() // one write per acknowledged append
	}
}

// TestCrashDuringAppends kills a child process that appends in a loop with
// SIGKILL at random moments, 10 rounds on the same ledger. After each kill
// the ledger opens, verifies, and holds every append the child had been told
// succeeded, at the position it was told.
func TestCrashDuringAppends(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	path := filepath.Join(t.TempDir(), "ledger.db")
	projs := []fold.Projection{testProjection()}
	acked := map[uint64]string{} // position -> id, over all rounds
	const rounds = 10
	appends := 0 // acknowledged appends (batches of 1..4 events), over all rounds
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path, fmt.Sprintf("TREE_RING_CRASH_ROUND=%d", round))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var got []string
		first, ok := <-lines // the clock starts at the first acknowledged append
		if !ok {
			cmd.Wait()
			t.Fatalf("round %d: child ended without appending: %s", round, stderr.String())
		}
		got = append(got, first)
		timer := time.After(time.Duration(rng.IntN(40_000)) * time.Microsecond)
	wait:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break wait
				}
				got = append(got, l)
			case <-timer:
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				timer = nil
			}
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child was not killed: %v %s", round, err, stderr.String())
		}
		for _, l := range got {
			for _, f := range strings.Fields(strings.TrimPrefix(l, "ack")) {
				p, id, _ := strings.Cut(f, ":")
				pos, _ := strconv.ParseUint(p, 10, 64)
				acked[pos] = id
			}
		}

		st, err := Open(path, Options{Projections: projs})
		if err != nil {
			t.Fatalf("round %d: open after kill: %v", round, err)
		}
		if _, err := st.Verify(bg); err != nil {
			t.Fatalf("round %d: verify after kill: %v", round, err)
		}
		var lost []string
		err = st.View(func(r *Reader) error {
			for pos, id := range acked {
				e, ok, err := r.Event(pos)
				if err != nil {
					return err
				}
				if !ok || e.ID.String() != id {
					lost = append(lost, fmt.Sprintf("%s at position %d (found %v, %v)", id, pos, e.ID, ok))
				}
			}
			return nil
		})
		st.Close()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(lost) > 0 {
			t.Fatalf("round %d: %d acknowledged events lost: %v", round, len(lost), lost)
		}
		appends += len(got)
		t.Logf("round %d: %d acknowledged appends, %d events acknowledged in total", round, len(got), len(acked))
	}
	// The summary docs/reliability.md quotes; lost is 0 or the test failed above.
	t.Logf("crash: %d rounds, %d acknowledged appends, %d acknowledged events, 0 lost", rounds, appends, len(acked))
}
