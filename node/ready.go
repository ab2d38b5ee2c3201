package node

// Append adds what o asks after what r asks, as one Ready: the newer
// state to write (o's Persist with its PersistSeq, when it has one), the
// lists in order, Publish when either sets it, the earlier wake-up.
func (r *Ready) Append(o Ready) {
	if o.Persist != nil {
		r.Persist, r.PersistSeq = o.Persist, o.PersistSeq
	} else if o.PersistSeq > r.PersistSeq {
		r.PersistSeq = o.PersistSeq
	}
	r.Publish = r.Publish || o.Publish
	r.Events = append(r.Events, o.Events...)
	r.Answers = append(r.Answers, o.Answers...)
	r.Run = append(r.Run, o.Run...)
	r.Check = append(r.Check, o.Check...)
	r.Probes = append(r.Probes, o.Probes...)
	r.Fences = append(r.Fences, o.Fences...)
	r.NodeActions = append(r.NodeActions, o.NodeActions...)
	r.Configs = append(r.Configs, o.Configs...)
	r.Ordered = append(r.Ordered, o.Ordered...)
	r.Announce = append(r.Announce, o.Announce...)
	if !o.WakeAt.IsZero() && (r.WakeAt.IsZero() || o.WakeAt.Before(r.WakeAt)) {
		r.WakeAt = o.WakeAt
	}
}
