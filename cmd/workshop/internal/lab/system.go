package lab

import (
	"slices"
	"time"
)

// FooddeliveryPkg is the running system's main package.
const FooddeliveryPkg = "./cmd/fooddelivery"

// BuildTimeout bounds one go build of the running system.
const BuildTimeout = 5 * time.Minute

// LearnerTag is the build tag that builds lab l's code into the running
// system.
func (l Lab) LearnerTag() string { return "learner" + l.Num() }

// RunsInTheSystem reports whether the running system has an integration
// point for lab l (a learnerNN.go): the nine known labs do.
func (l Lab) RunsInTheSystem() bool { return slices.Contains(Known, l.Name) }
