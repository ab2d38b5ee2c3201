//go:build !havenplant

// Package planted holds the switches of the safety defects that the model
// checker (test/model) re-introduces on purpose, to show that it finds
// them. Only a binary built with the tag havenplant can turn one on: in
// every other build On is the constant false, and the planted branch is
// dead code the compiler removes.
package planted

// On reports whether the defect named bug is planted: never, without the
// tag havenplant.
func On(bug string) bool { return false }
