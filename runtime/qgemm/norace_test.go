//go:build !race

package qgemm

const raceEnabled = false
