package main

import (
	"context"
	"fmt"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
)

// recordedGuidance is the last guidance.recorded of st (nil st, or none:
// nothing recorded), read from the store stream, which holds a few events
// per init or publication.
func recordedGuidance(ctx context.Context, st *bolt.Store) ([]events.FileDigest, error) {
	if st == nil {
		return nil, nil
	}
	var files []events.FileDigest
	err := st.ReadStream(ctx, events.StoreStream, 0, func(e *events.Envelope) error {
		if e.Type != events.TypeGuidanceRecorded {
			return nil
		}
		p, err := events.DecodePayload(e)
		if err != nil {
			return err
		}
		files = p.(*events.GuidanceRecorded).Files
		return nil
	})
	return files, err
}

// guidanceCheck reads the guidance files on disk against what st records
// (activation.Guidance).
func (pr *project) guidanceCheck(ctx context.Context, st *bolt.Store) (ours []events.FileDigest, foreign []adapters.Finding, changed bool, err error) {
	rec, err := recordedGuidance(ctx, st)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read guidance.recorded: %w", err)
	}
	disk, err := adapters.GuidanceOnDisk(pr.root)
	if err != nil {
		return nil, nil, false, err
	}
	ours, foreign, changed = activation.Guidance(rec, disk)
	return ours, foreign, changed, nil
}

// recordGuidance records, after init installed the guidance files, the
// ones that are Tree Ring's (guidance.recorded), when they changed.
func (pr *project) recordGuidance(ctx context.Context, g *Globals) error {
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	ours, _, changed, err := pr.guidanceCheck(ctx, st)
	if err != nil || !changed {
		return err
	}
	if ours == nil {
		ours = []events.FileDigest{}
	}
	e, err := g.Factory("cli").New(events.StoreStream, events.TypeGuidanceRecorded, &events.GuidanceRecorded{Files: ours})
	if err != nil {
		return err
	}
	return st.Update(ctx, func(tx *bolt.Tx) error {
		_, err := tx.Append(events.StoreStream, int64(tx.StreamVersion(events.StoreStream)), e)
		return err
	})
}
