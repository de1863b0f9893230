//go:build !amd64 || noasm

package qgemm

func archPeakLoops() []PeakLoop { return nil }
