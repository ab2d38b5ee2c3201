//go:build havenplant

package planted

// set is the planted defects; the checker's tests set it before a run and
// clear it after (one run at a time).
var set = map[string]bool{}

// On reports whether the defect named bug is planted.
func On(bug string) bool { return set[bug] }

// Set plants (on) or removes the defect named bug.
func Set(bug string, on bool) {
	if on {
		set[bug] = true
		return
	}
	delete(set, bug)
}
