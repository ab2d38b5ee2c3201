package heartbeat

// receive hands b to the core as the transport would, authenticated as
// the sender it names (tests that inject messages).
func (c *core) receive(b []byte) {
	sender := ""
	if m, err := decode(b); err == nil {
		sender = m.From
	}
	c.receiveFrom(sender, 0, b)
}
