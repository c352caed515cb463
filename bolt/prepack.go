package bolt

import (
	"encoding/binary"
	"fmt"
)

// importPacker packs an import chunk's event values (packEvent) on a
// goroutine of its own while the chunk's transaction seals, folds and puts
// the events before them, so that on two cores the pack, a quarter of an
// import's CPU, is mostly off the one goroutine that may write. When the
// packer is behind, the chunk packs a batch itself. Values are put in
// position order as their batches are ready, and all of them before the
// chunk ends (finish): nothing reads an event of the chunk before its
// value is put (its folds get the envelope; the events bucket is read
// before a chunk starts or after it ends).
//
// One packer per chunk, used by the chunk's goroutine only; its goroutine
// ends before finish or stop returns, so none outlives its chunk.
type importPacker struct {
	in    chan *packJob // batches for the packer, in order
	out   chan *packJob // the packer's batches, packed, in order
	job   *packJob      // the batch being filled
	queue []*packJob    // batches not yet put, in order
	// arena holds the copies of stored forms that do not outlive their
	// seal and the values of the batches the chunk packs itself.
	arena valueArena
}

// packJob is a batch of events: their positions and stored forms, then
// their values (ready: packed, and visible to the chunk's goroutine).
type packJob struct {
	pos   []uint64
	enc   [][]byte
	val   [][]byte
	ready bool
}

// packBatch is how many events a packJob holds: a channel operation per
// batch, not per event, and the chunk never far behind the packer.
const packBatch = 256

// newImportPacker starts the packer of a chunk of at most n events.
func newImportPacker(n int) *importPacker {
	p := &importPacker{
		in: make(chan *packJob, 2),
		// Room for every batch of the chunk: the packer never waits.
		out: make(chan *packJob, n/packBatch+2),
	}
	go func() {
		defer close(p.out)
		var a valueArena
		for j := range p.in {
			j.pack(&a)
			p.out <- j
		}
	}()
	return p
}

// pack packs j's values into a.
func (j *packJob) pack(a *valueArena) {
	j.val = make([][]byte, len(j.enc))
	for k, enc := range j.enc {
		j.val[k] = a.pack(enc)
	}
}

// add queues the stored form enc of the event at pos; owned says enc
// stays valid until the chunk ends (else it is copied). At the end of a
// batch it puts the batches that are ready.
func (p *importPacker) add(t *Tx, pos uint64, enc []byte, owned bool) error {
	if !owned {
		enc = p.arena.copy(enc)
	}
	if p.job == nil {
		p.job = &packJob{pos: make([]uint64, 0, packBatch), enc: make([][]byte, 0, packBatch)}
	}
	p.job.pos = append(p.job.pos, pos)
	p.job.enc = append(p.job.enc, enc)
	if len(p.job.pos) < packBatch {
		return nil
	}
	p.send()
	return p.putReady(t, false)
}

// send hands the batch being filled to the packer, or packs it here when
// the packer already has enough waiting.
func (p *importPacker) send() {
	j := p.job
	if j == nil {
		return
	}
	p.job = nil
	p.queue = append(p.queue, j)
	select {
	case p.in <- j:
	default:
		j.pack(&p.arena)
		j.ready = true
	}
}

// putReady puts the queued batches, in order, while the first is ready;
// wait waits for the packer's.
func (p *importPacker) putReady(t *Tx, wait bool) error {
	for len(p.queue) > 0 {
		j := p.queue[0]
		if !j.ready {
			// The packer returns its batches in order: the one it
			// returns next is the first in the queue not packed here.
			if wait {
				<-p.out
			} else {
				select {
				case <-p.out:
				default:
					return nil
				}
			}
			j.ready = true
		}
		for k, pos := range j.pos {
			binary.BigEndian.PutUint64(t.key[:], pos) // bbolt copies keys
			if err := t.events.Put(t.key[:], j.val[k]); err != nil {
				return fmt.Errorf("append at %d: %w", pos, err)
			}
		}
		p.queue = p.queue[1:]
	}
	return nil
}

// finish puts every queued event and ends the packer.
func (p *importPacker) finish(t *Tx) error {
	p.send()
	err := p.putReady(t, true)
	p.stop()
	return err
}

// stop ends the packer without putting what is left (a chunk that
// failed); a no-op after finish.
func (p *importPacker) stop() {
	if p.in == nil {
		return
	}
	close(p.in)
	for range p.out {
	}
	p.in = nil
}
