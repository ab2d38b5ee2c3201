package chaos

import "path/filepath"

// NewJournalOnly is the journal and the test services' scripts of the
// suite without its bed (no namespace, no node): for tests that run their
// own daemons, on loopback (the upgrade tests of test/e2e), and read the
// same never-twice journal. work holds the journal, the scripts and the
// apps; ServiceConfig writes each service's config.
func NewJournalOnly(work string, svcs []Service) (*Cluster, error) {
	c := &Cluster{Work: work, Journal: filepath.Join(work, "journal"), Nodes: map[string]*Node{}, Services: svcs}
	if err := writeFile(c.Journal, "", 0o644); err != nil {
		return nil, err
	}
	return c, c.writeScripts()
}
