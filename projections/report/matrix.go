package report

// The fleet's matrix: one row per store (in the order FleetPage sorted
// them, by store id), one column per harness any store knows, the state
// at the instant in each cell.

type matrixView struct {
	Harnesses []string
	Rows      []matrixRow
}

type matrixRow struct {
	Anchor, StoreID, Label, RootFingerprint string
	Verified, Replica, LastEvent            string
	OK                                      bool
	Cells                                   []matrixCell
}

type matrixCell struct {
	Known  bool
	Swatch swatch
}

func matrixOf(f Fleet) matrixView {
	seen := map[string]bool{}
	for _, s := range f.Stores {
		for _, h := range s.Harnesses {
			seen[h.ID] = true
		}
	}
	m := matrixView{Harnesses: sortedKeys(seen)}
	for _, s := range f.Stores {
		states := map[string]string{}
		for _, h := range s.Harnesses {
			states[h.ID] = h.State
		}
		r := matrixRow{Anchor: "store-" + s.ID, StoreID: s.ID, Label: dash(s.Label), RootFingerprint: shortFP(s.RootFingerprint),
			Verified: verifiedText(s.Verification), OK: s.Verification.OK, Replica: dash(s.Replica), LastEvent: stamp(s.LastEventAt)}
		for _, id := range m.Harnesses {
			st, ok := states[id]
			r.Cells = append(r.Cells, matrixCell{Known: ok, Swatch: swatchOf(st)})
		}
		m.Rows = append(m.Rows, r)
	}
	return m
}
