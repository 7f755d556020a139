package blockproxy

// InFlight returns the fetches in progress.
func (g *Gate) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight
}

// Used returns the bytes held (decoded blocks alive and reservations).
func (c *DecodedCache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
