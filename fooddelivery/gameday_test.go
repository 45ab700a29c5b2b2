package fooddelivery_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery"
)

func TestGameDayForcesAndReleases(t *testing.T) {
	var nilSwitch *fooddelivery.GameDay
	assert.False(t, nilSwitch.Forced(fooddelivery.FeatureMenu), "a nil switch forces nothing")

	var gd fooddelivery.GameDay
	assert.False(t, gd.Forced(fooddelivery.FeatureMenu), "the zero switch forces nothing")
	gd.Force(fooddelivery.AllFeatures()...)
	for _, f := range fooddelivery.AllFeatures() {
		assert.True(t, gd.Forced(f), "%s is forced", f)
	}
	gd.Release(fooddelivery.FeatureAuth)
	assert.False(t, gd.Forced(fooddelivery.FeatureAuth), "a released feature is no longer forced")
	assert.True(t, gd.Forced(fooddelivery.FeatureMenu), "releasing one feature leaves the others forced")
	gd.Release()
	for _, f := range fooddelivery.AllFeatures() {
		assert.False(t, gd.Forced(f), "Release() releases %s too", f)
	}
}
